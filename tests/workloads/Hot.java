// SPDX-License-Identifier: Apache-2.0
// Hot.java - a Java 17 workload with a known CPU profile, recorded with JFR
// by tests/integration/test_jfr_java.sh: for the given number of seconds the
// main thread spends about 80 % of its time in Hot.hotLoop and 20 % in
// Hot.coldLoop (both leaf methods: plain arithmetic, no calls), a second
// thread "hot-worker" runs hotLoop only, and a third allocates byte arrays in
// Hot.allocate so the recording also has allocation events.
public final class Hot {
    static volatile long sink;

    static long hotLoop(long n) {
        long x = 1;
        for (long i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        return x;
    }

    static long coldLoop(long n) {
        long x = 7;
        for (long i = 0; i < n; i++) {
            x += (x << 3) ^ i;
        }
        return x;
    }

    static void allocate(long until) {
        while (System.nanoTime() < until) {
            byte[] b = new byte[64 * 1024];
            b[b.length - 1] = 1;
            sink += b.length;
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
        long until = System.nanoTime() + (long) (seconds * 1e9);
        Thread worker = new Thread(() -> {
            while (System.nanoTime() < until) {
                sink += hotLoop(2_000_000);
            }
        }, "hot-worker");
        Thread allocator = new Thread(() -> allocate(until), "allocator");
        worker.start();
        allocator.start();
        while (System.nanoTime() < until) {
            sink += hotLoop(4_000_000);
            sink += coldLoop(1_000_000);
        }
        worker.join();
        allocator.join();
        System.out.println("done " + (sink & 1));
    }
}
