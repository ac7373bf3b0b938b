#!/usr/bin/env python3
"""Times shell-free commands side by side, interleaved: run 1 of every
command, then run 2 of every command, and so on, so that load from other
work on a shared machine falls on all of them alike. Prints the median and
the spread (quartiles) of each command's wall time, and its ratio to the
first command's median.

    benches/interleaved.py [-r RUNS] [-w WARMUP] 'CMD 1' 'CMD 2' ...

Each CMD is split like a shell would (shlex), run without a shell, with
stdout and stderr discarded; a non-zero exit stops the script.
"""

import argparse
import shlex
import statistics
import subprocess
import sys
import time


def run(argv):
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"exit {done.returncode}: {shlex.join(argv)}")
    return elapsed * 1e3


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
    for _ in range(args.runs):
        for argv, t in zip(argvs, times):
            t.append(run(argv))
    base = statistics.median(times[0])
    for cmd, t in zip(args.commands, times):
        q1, med, q3 = statistics.quantiles(t, n=4)
        print(f"{med:8.1f} ms  [{q1:7.1f} – {q3:7.1f}]  {med / base:5.2f}×  {cmd}")


if __name__ == "__main__":
    main()
