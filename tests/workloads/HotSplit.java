// SPDX-License-Identifier: Apache-2.0
// HotSplit.java - a Java 17 workload whose CPU time splits between three
// leaf methods by the clock, not by iteration counts, so the split holds
// whatever the JIT does: in each 10 ms round the main thread runs
// HotSplit$Alpha.work (an interface call) for about 5 ms,
// HotSplit$Beta.work (the same call site) for 3 ms and HotSplit.gamma for
// 2 ms; gamma calls HotSplit.mix, small enough that C2 inlines it.
// Every leaf is called from HotSplit.drive, called from HotSplit.main.
// After a third of the run a third implementation, HotSplit$Delta, is
// loaded and called through the same site: the compiled drive (which had
// seen only Alpha and Beta there) is deoptimized and later compiled
// again, so drive runs interpreted, compiled, deoptimized and recompiled
// under one name. Usage: java HotSplit SECONDS [CPU_SECONDS]: runs for
// SECONDS, and on until the process has used CPU_SECONDS of CPU time
// (a loaded machine gives it less than its wall time).
import java.lang.management.ManagementFactory;

public final class HotSplit {
    interface Work {
        long work(long x, long until);
    }

    static final class Alpha implements Work {
        public long work(long x, long until) {
            do {
                for (int i = 0; i < 20000; i++) {
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
                for (int i = 0; i < 20000; i++) {
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
            for (int i = 0; i < 20000; i++) {
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

    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
        double cpu = args.length > 1 ? Double.parseDouble(args[1]) : 0;
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        long third = start + (long) (seconds * 1e9 / 3);
        long round = 10_000_000L;
        Work[] works = { new Alpha(), new Beta() };
        long x = 1;
        boolean delta = false;
        for (long n = 0;; n++) {
            long now = System.nanoTime();
            if (!delta && now >= third) {
                works = new Work[] { new Alpha(), new Beta(), new Delta() };
                delta = true;
            }
            if (now >= end && n % 50 == 0 && (cpu <= 0 || cpuSeconds() >= cpu)) {
                break;
            }
            x = drive(works, x, round);
        }
        sink = x;
        System.out.println("done " + (sink & 1));
    }
}
