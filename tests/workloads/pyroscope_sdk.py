# SPDX-License-Identifier: Apache-2.0
"""A workload for test_producer_pyroscope_sdk.sh: the real Pyroscope
Python SDK (pyroscope-io) profiles it and pushes to the server given as
the first argument, unchanged.

The main thread alternates hot_work and cold_work (three times as many
loop iterations in hot) until the two have used CPU_SECONDS of thread
CPU time (time.thread_time: CLOCK_THREAD_CPUTIME_ID, so a loaded machine
stretches the run, not the figures; at most 8 times that in wall time),
measuring each call's thread CPU and wall time. The last line of output
is JSON with that measured split, which the test compares with the
profile's. A quarter of the hot calls run under
pyroscope.tag_wrapper({"phase": "burst"}), a dynamic tag.

Usage: python pyroscope_sdk.py URL APP CPU_SECONDS
"""
import json
import sys
import time

import pyroscope


def hot_work(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) & 0xFFFFFFFF
    return x


def cold_work(n):
    x = 0
    for i in range(n):
        x = (x * 17 + i) & 0xFFFFFFFF
    return x


def main():
    url, app, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
    pyroscope.configure(application_name=app, server_address=url,
                        sample_rate=100, tags={"env": "ci", "region": "eu"})
    hot = cold = hot_wall = cold_wall = 0.0
    end = time.monotonic() + 8 * secs
    i = 0
    while hot + cold < secs and time.monotonic() < end:
        w0 = time.monotonic()
        t0 = time.thread_time()
        if i % 4 == 0:
            with pyroscope.tag_wrapper({"phase": "burst"}):
                hot_work(60000)
        else:
            hot_work(60000)
        t1 = time.thread_time()
        w1 = time.monotonic()
        cold_work(20000)
        t2 = time.thread_time()
        hot += t1 - t0
        cold += t2 - t1
        hot_wall += w1 - w0
        cold_wall += time.monotonic() - w1
        i += 1
    pyroscope.shutdown()
    print(json.dumps({"done": True, "hot_ns": int(hot * 1e9), "cold_ns": int(cold * 1e9),
                      "hot_wall_ns": int(hot_wall * 1e9), "cold_wall_ns": int(cold_wall * 1e9)}))


if __name__ == "__main__":
    main()
