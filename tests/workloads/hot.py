# SPDX-License-Identifier: Apache-2.0
# hot.py - a Python workload with a known CPU split for the agent's
# interpreter-frame tests: work_a, work_b and work_c (in outer.run) share
# the CPU 5:3:2 by construction; each round's CPU time is measured by the
# program itself (time.thread_time) and the totals printed at the end, so
# the test compares the agent's shares with the program's own.
# Usage: hot.py SECONDS [hash]   ("hash": also hashes with hashlib, a C
# extension calling libcrypto, under work_hash)
import hashlib
import sys
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def work_a(n):
    return spin(n)


def work_b(n):
    return spin(n)


class Outer:
    def run(self, n):
        return spin(n)


def work_hash(data):
    h = hashlib.sha256()
    for _ in range(200):
        h.update(data)
    return h.digest()


def main():
    secs = float(sys.argv[1])
    do_hash = len(sys.argv) > 2 and sys.argv[2] == "hash"
    spent = {"work_a": 0.0, "work_b": 0.0, "Outer.run": 0.0, "work_hash": 0.0}
    o = Outer()
    data = b"x" * 65536
    end = time.thread_time() + secs
    while time.thread_time() < end:
        for name, fn, n in (("work_a", work_a, 50000), ("work_b", work_b, 30000),
                            ("Outer.run", o.run, 20000)):
            t = time.thread_time()
            fn(n)
            spent[name] += time.thread_time() - t
        if do_hash:
            t = time.thread_time()
            work_hash(data)
            spent["work_hash"] += time.thread_time() - t
    total = sum(spent.values())
    for k, v in spent.items():
        print("%s %.4f" % (k, v / total if total else 0))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
