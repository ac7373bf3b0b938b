#!/usr/bin/env python3
"""Times shell-free commands side by side, interleaved: run 1 of every
command, then run 2 of every command, and so on, so that load from other
work on a shared machine falls on all of them alike. Prints the median and
the spread (quartiles) of each command's wall time, its ratio to the
first command's median, and the median CPU time (user + system, from the
child's own resource usage: on 2 cores, CPU time taken from a pass shows
here before it shows in the wall time).

    benches/interleaved.py [-r RUNS] [-w WARMUP] 'CMD 1' 'CMD 2' ...

Each CMD is split like a shell would (shlex), run without a shell, with
stdout and stderr discarded; a non-zero exit stops the script.
"""

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time


def run(argv):
    """Wall and CPU milliseconds of one run of `argv`."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"exit {code}: {shlex.join(argv)}")
    return elapsed * 1e3, (usage.ru_utime + usage.ru_stime) * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-r", "--runs", type=int, default=15)
    p.add_argument("-w", "--warmup", type=int, default=2)
    p.add_argument("commands", nargs="+")
    args = p.parse_args()
    argvs = [shlex.split(c) for c in args.commands]
    for _ in range(args.warmup):
        for argv in argvs:
            run(argv)
    times = [[] for _ in argvs]
    cpu = [[] for _ in argvs]
    for _ in range(args.runs):
        for argv, t, c in zip(argvs, times, cpu):
            wall, used = run(argv)
            t.append(wall)
            c.append(used)
    base = statistics.median(times[0])
    for cmd, t, c in zip(args.commands, times, cpu):
        q1, med, q3 = statistics.quantiles(t, n=4)
        print(f"{med:8.1f} ms  [{q1:7.1f} – {q3:7.1f}]  {med / base:5.2f}×  "
              f"cpu {statistics.median(c):7.1f} ms  {cmd}")


if __name__ == "__main__":
    main()
