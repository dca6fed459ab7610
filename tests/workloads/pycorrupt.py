# SPDX-License-Identifier: Apache-2.0
# pycorrupt.py - a Python program that breaks its own interpreter state
# where CPython itself does not look while it runs: the qualified name of
# one hot function's code object is pointed at unmapped memory, and the
# location table of another is overwritten with garbage (ctypes). The
# agent must keep running, count these stacks as not named, and never
# show a garbage name. Runs for SECONDS of CPU.
import ctypes
import os
import sys
import time

def bad_name(n):
    x = 0
    for i in range(n):
        x += i
    return x


def bad_lines(n):
    x = 0
    for i in range(n):
        x ^= i
    return x



def main():
    secs = float(sys.argv[1])
    code = bad_name.__code__
    # co_name and co_qualname (the same str for a module-level function):
    # the fields holding id(code.co_qualname).
    base = id(code)
    words = (ctypes.c_void_p * 40).from_address(base)
    q = [i for i in range(40) if words[i] == id(code.co_qualname)]
    if not q:
        print("no co_qualname field found")
        return 1
    for i in q:
        words[i] = 0x10  # unmapped; CPython reads them only for repr/tracebacks
    lt = bad_lines.__code__.co_linetable
    buf = (ctypes.c_char * len(lt)).from_address(id(lt) + 32)
    for i in range(len(lt)):
        buf[i] = b"\x7f" if i % 2 else b"\xff"
    end = time.thread_time() + secs
    while time.thread_time() < end:
        bad_name(20000)
        bad_lines(20000)
    print("done")
    sys.stdout.flush()
    os._exit(0)  # the broken code object must not be freed


if __name__ == "__main__":
    sys.exit(main())
