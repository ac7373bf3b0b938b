#!/usr/bin/env python3
"""The module's calls beside the command line, interleaved: each round
runs the CLI's command as a process, then the same work as a call in this
process, so that load from other work falls on both alike. Prints the
median wall time of each over the rounds (after one warm-up round) and
its ratio to the CLI's, then what turning a large report into a dict
costs.

    python calls.py CLI MODEL ID [ROUNDS]
"""

import json
import statistics
import subprocess
import sys
import time

import embscope


def wall_ms(call):
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1e3


def process(argv):
    return lambda: subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)


def main():
    cli, model, qid = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 15
    m = embscope.open(model)
    m.resolve([qid])
    groups = [
        ("lookup, one row", [
            ("CLI `lookup --id`", process([cli, "lookup", model, "--id", str(qid), "--format", "json"])),
            ("m.lookup([id])", lambda: m.lookup([qid])),
        ]),
        ("neighbors, one query", [
            ("CLI `neighbors #ID --json`", process([cli, "neighbors", model, f"#{qid}", "-k", "10", "--json"])),
            ("open(model).neighbors(id)", lambda: embscope.open(model).neighbors(qid, k=10)),
            ("m.neighbors(id), m open", lambda: m.neighbors(qid, k=10)),
        ]),
    ]
    calls = [c for _, cs in groups for c in cs]
    times = {name: [] for name, _ in calls}
    for r in range(rounds + 1):
        for name, call in calls:
            t = wall_ms(call)
            if r > 0:
                times[name].append(t)
    for title, cs in groups:
        print(f"== {title}")
        base = statistics.median(times[cs[0][0]])
        for name, _ in cs:
            med = statistics.median(times[name])
            print(f"{med:9.2f} ms  {med / base:5.2f}×  {name}")
    # The largest dict a call makes: undertrained's candidates, as many as
    # asked for; json.loads of the serialised report makes it.
    scan = [wall_ms(lambda: m.undertrained(top=10_000)) for _ in range(3)]
    doc = json.dumps(m.undertrained(top=10_000))
    loads = [wall_ms(lambda: json.loads(doc)) for _ in range(rounds)]
    print("== a report as a dict")
    print(f"{statistics.median(scan):9.2f} ms  m.undertrained(top=10_000), the call")
    print(f"{statistics.median(loads):9.2f} ms  json.loads of its {len(doc) / 1e6:.1f} MB document")


if __name__ == "__main__":
    main()
