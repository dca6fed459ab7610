// SPDX-License-Identifier: Apache-2.0
// HotSplit.java - a Java 17 workload whose CPU time splits between three
// leaf methods by the clock, not by iteration counts, so the split holds
// whatever the JIT does: each round (of a random 0.05-0.35 ms, so that no
// sampler's period lines up with it) the main thread runs
// HotSplit$Alpha.work (an interface call) for 50 % of it,
// HotSplit$Beta.work (the same call site) for 30 % and HotSplit.gamma for
// 20 %; gamma calls HotSplit.mix, small enough that C2 inlines it. Every
// leaf is called from HotSplit.drive, called from HotSplit.main.
// After DELTA_ROUNDS rounds (by then C2 has compiled drive, whose profile
// never saw its third call taken) a third implementation, HotSplit$Delta,
// is loaded and called from drive: the compiled drive hits an uncommon
// trap, is deoptimized (made not entrant) and later compiled again, so
// drive runs interpreted, compiled, deoptimized and recompiled under one
// name. Usage: java HotSplit SECONDS [CPU_SECONDS]: runs for SECONDS and
// 1.5 * DELTA_ROUNDS rounds at least, and on until the process has used
// CPU_SECONDS of CPU time (a loaded machine gives it less than its wall
// time). Prints "delta at ROUND" when Delta comes in.
import java.lang.management.ManagementFactory;

public final class HotSplit {
    interface Work {
        long work(long x, long until);
    }

    static final class Alpha implements Work {
        public long work(long x, long until) {
            do {
                for (int i = 0; i < 5000; i++) {
                    x = x * 6364136223846793005L + 1442695040888963407L;
                    x ^= x >>> 29;
                }
            } while (System.nanoTime() < until);
            return x;
        }
    }

    static final class Beta implements Work {
        public long work(long x, long until) {
            do {
                for (int i = 0; i < 5000; i++) {
                    x += (x << 3) ^ i;
                    x = Long.rotateLeft(x, 7);
                }
            } while (System.nanoTime() < until);
            return x;
        }
    }

    // Loaded only after the first third of the run (its first use
    // invalidates the compiled drive, which assumed two receivers).
    static final class Delta implements Work {
        public long work(long x, long until) {
            return x + until;
        }
    }

    static volatile long sink;

    static long mix(long x, int i) {
        return (x ^ (x >>> 17)) * 0x9E3779B97F4A7C15L + i;
    }

    static long gamma(long x, long until) {
        do {
            for (int i = 0; i < 5000; i++) {
                x = mix(x, i);
            }
        } while (System.nanoTime() < until);
        return x;
    }

    static long drive(Work[] works, long x, long round) {
        long t = System.nanoTime();
        x = works[0].work(x, t + round * 5 / 10);
        x = works[1].work(x, t + round * 8 / 10);
        if (works.length > 2) {
            x = works[2].work(x, 0);
        }
        return gamma(x, t + round);
    }

    static double cpuSeconds() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime() / 1e9;
    }

    static final int DELTA_ROUNDS = 12000;

    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
        double cpu = args.length > 1 ? Double.parseDouble(args[1]) : 0;
        long end = System.nanoTime() + (long) (seconds * 1e9);
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(17);
        Work[] works = { new Alpha(), new Beta() };
        long x = 1;
        for (long n = 0;; n++) {
            if (n == DELTA_ROUNDS) {
                works = new Work[] { new Alpha(), new Beta(), new Delta() };
                System.out.println("delta at " + n);
            }
            if (n >= 3 * DELTA_ROUNDS / 2 && n % 100 == 0 && System.nanoTime() >= end
                    && (cpu <= 0 || cpuSeconds() >= cpu)) {
                break;
            }
            x = drive(works, x, 50_000 + rnd.nextInt(300_000));
        }
        sink = x;
        System.out.println("done " + (sink & 1));
    }
}
