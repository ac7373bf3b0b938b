#!/usr/bin/env python3
"""Prints the performance table: the scan, `check` and the kernels, measured
side by side in one run on a Llama-3-shaped checkpoint.

    benches/table.py [DIR] [-r RUNS] [--all-kernels]

DIR (default /work/bench-data/llama3) is the 128256 x 4096 BF16, two-shard,
untied checkpoint that `cargo run --release --example gen-fixtures --
--llama3 DIR` writes. The script builds `embscope` and the `kernel` bench in
release mode (CARGO_TARGET_DIR is honoured), drops the shards from the page
cache and reads them back in (see `refill_cache`), then runs
every command RUNS times (default 9) in a fresh process each, interleaved:
round 1 of every command, then round 2, and so on, so that load from other
work on a shared machine falls on all of them alike. It prints medians and
quartiles of wall time, then the derived figures:

- 1 query against a plain all-cores read of the embedding (`kernel read`);
- the cost of each extra query (64 queries against 1), with the default
  kernel, with AMX hidden (`EMBSCOPE_CPU_MASK=amx`) and with AVX512-VNNI
  hidden (`EMBSCOPE_CPU_MASK=avx512vnni`, the paths before the int8 kernel),
  and with AVX-512 and AMX hidden (`EMBSCOPE_CPU_MASK=avx512,amx`: a CPU
  with AVX2 only);
- the default kernel against the best forced one (`EMBSCOPE_KERNEL=...`)
  at 1, 4, 16 and 64 queries (forced: the contenders `avx2`, `avx512`,
  `avx512bf16`, `amx`, `avx512vnni` this CPU has; `--all-kernels` adds
  `portable`, which takes many seconds at 64 queries);
- `check` of both matrices against the read of both;
- peak RssAnon of 64 queries (sampled every millisecond from /proc).

Queries are `#ID`s (no tokenizer needed), run on a copy of DIR without the
tokenizer (symbolic links), so the scan is what is timed; `check` is timed
both with and without the tokenizer.

    benches/table.py --kernels MODEL... [-r RUNS] [--embscope BIN]

prints instead the kernel table of docs/kernels.md: every kernel this CPU
has, forced (`EMBSCOPE_KERNEL`), at 1, 4, 16 and 64 queries, on each MODEL
(a checkpoint directory or a GGUF file; its embedding's dtype names it),
next to the default choice on this CPU and with `EMBSCOPE_CPU_MASK`
standing for the CPU classes with AVX512_BF16 but without the VNNI kernel
(`avx512vnni,amx`: no VBMI, as Cooper Lake), without AVX512_BF16 and VNNI
(`avx512bf16,avx512vnni,amx`) and with AVX2 only (`avx512,amx`), all
interleaved. Cells are median CPU milliseconds (user + system) with the
median wall milliseconds in brackets: on a machine shared with other work
the CPU time of a run that keeps every core busy moves far less than its
wall time. For each class it then names, per dtype and query count, the
fastest kernel that class runs (by CPU time) and by how much each kernel
leads the best of the others there: a kernel earns its place where it leads
by 10% or more. `portable`
is timed at 1 and 4 queries only (see PORTABLE_MAX_QUERIES).
"""

import argparse
import glob
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The kernel table times `portable` up to this many queries only: beyond,
# it takes seconds where every SIMD kernel takes a fraction of one, and
# it is the kernel of other architectures, not a contender on x86-64.
PORTABLE_MAX_QUERIES = 4

# The CPU classes of the kernel table: (name, EMBSCOPE_CPU_MASK, the
# kernels that class runs, portable always among them).
CLASSES = [
    ("this CPU", None, None),
    ("AVX-512 BF16 without VBMI (Cooper Lake)", "avx512vnni,amx",
     {"portable", "avx2", "avx512", "avx512bf16"}),
    ("AVX-512 without BF16/VNNI", "avx512bf16,avx512vnni,amx", {"portable", "avx2", "avx512"}),
    ("AVX2 only", "avx512,amx", {"portable", "avx2"}),
]

# The default kernel with features hidden (tag, EMBSCOPE_CPU_MASK), timed
# at 1 and 64 queries for the cost of each extra query.
MASKED = [
    ("amx masked", "amx"),
    ("avx512vnni masked", "avx512vnni"),  # the paths before the int8 kernel
    ("avx512 masked", "avx512,amx"),  # a CPU with AVX2 only (most laptops)
]


def build():
    """Builds both binaries; returns (embscope, kernel bench) paths."""
    subprocess.run(["cargo", "build", "--release", "--bin", "embscope"], cwd=ROOT, check=True)
    out = subprocess.run(
        ["cargo", "bench", "--bench", "kernel", "--no-run", "--message-format=json"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    bench = [json.loads(l)["executable"] for l in out.splitlines()
             if '"executable":"' in l and "/kernel-" in l][-1]
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    return os.path.join(target, "release", "embscope"), bench


def run(argv, env, sample_rss=False):
    """Wall and CPU (user + system) milliseconds of one run, and its peak
    RssAnon in KiB when sampled."""
    start = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG if sample_rss else 0)
        if pid:
            break
        try:
            with open(f"/proc/{p.pid}/status") as f:
                m = re.search(r"RssAnon:\s+(\d+)", f.read())
                peak = max(peak, int(m.group(1)) if m else 0)
        except OSError:
            pass
        time.sleep(0.001)
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    ms = (time.perf_counter() - start) * 1e3
    code = p.returncode
    if code not in (0, 1):  # check exits 1 on findings
        sys.exit(f"exit {code}: {shlex.join(argv)}")
    return ms, (usage.ru_utime + usage.ru_stime) * 1e3, peak


def refill_cache(path):
    """Drops `path` from the page cache and reads it back in, so every
    file's cached pages are in the state one read from disk leaves. (How
    the pages were cached matters: on the machine of docs/performance.md,
    mapping a GiB whose pages had been cached in small pieces took 30 ms
    more than mapping one just read back, for the read and the commands
    alike.)"""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)


def page_cache_reclaim():
    """The DAMON monitors (kdamonds) of this machine that are on with a
    `pageout` scheme. Such a scheme drops cached file pages that no process
    maps and that look cold: between runs, the shards' pages go, and come
    back from disk in smaller pieces, which is slower to map (see
    `refill_cache`); the figures then drift over minutes. Some cloud VMs
    run one to hand memory back to their host."""
    root = "/sys/kernel/mm/damon/admin/kdamonds"
    found = []
    for k in sorted(glob.glob(f"{root}/[0-9]*")):
        try:
            with open(f"{k}/state") as f:
                if f.read().strip() != "on":
                    continue
            for action in glob.glob(f"{k}/contexts/*/schemes/*/action"):
                with open(action) as f:
                    if f.read().strip() == "pageout":
                        found.append(k)
                        break
        except OSError:
            continue
    return found


def cpu_name():
    with open("/proc/cpuinfo") as f:
        info = f.read()
    name = re.search(r"model name\s*:\s*(.*)", info).group(1)
    model = re.search(r"model\s*:\s*(\d+)", info).group(1)
    flags = re.search(r"flags\s*:\s*(.*)", info).group(1).split()
    wanted = ("avx512f", "avx512_bf16", "avx512_vnni", "avx512vbmi", "amx_bf16", "amx_tile")
    has = [f for f in wanted if f in flags]
    return f"{name} (model {model}), {os.cpu_count()} cores, {' '.join(has)}"


def offered(embscope, model, env):
    """The kernels `embscope` offers for `model` under `env`, as the error
    for an unknown kernel lists them."""
    probe = subprocess.run(
        [embscope, "neighbors", model, "#1"], env={**env, "EMBSCOPE_KERNEL": "?"},
        capture_output=True, text=True).stderr
    return probe.strip().rsplit(": ", 1)[1].rstrip(")").split(", ")


def dtype_of(embscope, model, env):
    """The stored dtype of `model`'s embedding, from `embscope info`."""
    out = subprocess.run([embscope, "--json", "info", model], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["embedding"]["dtype"]


def kernel_table(embscope, models, runs):
    """Prints the kernel table (see the module docs)."""
    base = dict(os.environ)
    for var in ("EMBSCOPE_KERNEL", "EMBSCOPE_CPU_MASK"):
        base.pop(var, None)
    tmp = tempfile.TemporaryDirectory(prefix="embscope-kernels-")
    batches = {}
    for n in (1, 4, 16, 64):
        batches[n] = os.path.join(tmp.name, f"ids{n}.txt")
        with open(batches[n], "w") as f:
            f.writelines(f"#{(1000 + 2003 * i) % 128256}\n" for i in range(n))
    cmds = []  # (dtype, n, column, argv, env)
    dtypes = []
    for model in models:
        dtype = dtype_of(embscope, model, base)
        dtypes.append((dtype, offered(embscope, model, base)))
        for f in ([model] if os.path.isfile(model) else glob.glob(f"{model}/*.safetensors")):
            refill_cache(f)
        for n in (1, 4, 16, 64):
            argv = [embscope, "--json", "neighbors", model, "--no-progress", "--batch", batches[n]]
            for k in dtypes[-1][1]:
                if k != "portable" or n <= PORTABLE_MAX_QUERIES:
                    cmds.append((dtype, n, k, argv, {"EMBSCOPE_KERNEL": k}))
            for name, mask, _ in CLASSES:
                cmds.append((dtype, n, f"default, {name}", argv,
                             {"EMBSCOPE_CPU_MASK": mask} if mask else {}))
    times, cpu = {}, {}
    for rnd in range(runs + 1):  # round 0 warms up
        for dtype, n, col, argv, env in cmds:
            ms, cpu_ms, _ = run(argv, {**base, **env})
            if rnd > 0:
                times.setdefault((dtype, n, col), []).append(ms)
                cpu.setdefault((dtype, n, col), []).append(cpu_ms)
    wall = {key: statistics.median(t) for key, t in times.items()}
    med = {key: statistics.median(t) for key, t in cpu.items()}
    print(f"CPU: {cpu_name()}; load average after: {os.getloadavg()[0]:.1f}")
    print(f"{runs} interleaved rounds (after one warm-up round) of "
          "`embscope --json neighbors MODEL --batch IDS`: median CPU ms (user + sys), "
          "[median wall ms]\n")
    for dtype, kernels in dtypes:
        cols = kernels + [f"default, {name}" for name, _, _ in CLASSES]
        print(f"{dtype}\n\n| queries | " + " | ".join(cols) + " |")
        print("|---|" + "---|" * len(cols))
        for n in (1, 4, 16, 64):
            cells = [f"{med[(dtype, n, c)]:.0f} [{wall[(dtype, n, c)]:.0f}]"
                     if (dtype, n, c) in med else "–" for c in cols]
            print(f"| {n} | " + " | ".join(cells) + " |")
        print()
    print("Per CPU class: the fastest kernel it runs, and each kernel's lead over the best "
          "of the others there (time of the best other / its time; 1.10 or more earns its place)\n")
    print("| class | dtype | queries | fastest | leads |")
    print("|---|---|---|---|---|")
    seen = set()  # a class that runs the same kernels as one above adds nothing
    for name, _, allowed in CLASSES:
        for dtype, kernels in dtypes:
            ks = [k for k in kernels if allowed is None or k in allowed]
            if (dtype, tuple(ks)) in seen:
                continue
            seen.add((dtype, tuple(ks)))
            for n in (1, 4, 16, 64):
                t = {k: med[(dtype, n, k)] for k in ks if (dtype, n, k) in med}
                ks = list(t)
                best = min(ks, key=t.get)
                leads = []
                for k in ks:
                    others = [t[o] for o in ks if o != k]
                    if others:
                        leads.append(f"{k} {min(others) / t[k]:.2f}")
                print(f"| {name} | {dtype} | {n} | {best} | {', '.join(leads)} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir", nargs="*", default=["/work/bench-data/llama3"])
    p.add_argument("-r", "--runs", type=int, default=9)
    p.add_argument("--all-kernels", action="store_true")
    p.add_argument("--kernels", action="store_true")
    p.add_argument("--embscope", help="with --kernels: this binary, not a fresh build "
                   "(a baseline's, to time it the same way)")
    args = p.parse_args()
    if args.kernels:
        embscope = args.embscope or build()[0]
        return kernel_table(embscope, args.dir, args.runs)
    embscope, bench = build()
    args.dir = args.dir[0]
    index = json.load(open(os.path.join(args.dir, "model.safetensors.index.json")))
    shard = {t: os.path.join(args.dir, f) for t, f in index["weight_map"].items()}
    embed, head = "model.embed_tokens.weight", "lm_head.weight"
    keep = tempfile.TemporaryDirectory(prefix="embscope-bench-")  # removed at exit
    tmp = keep.name
    notok = os.path.join(tmp, "model")
    os.mkdir(notok)
    for f in os.listdir(args.dir):
        if f.endswith(".safetensors") or f in ("config.json", "model.safetensors.index.json"):
            os.symlink(os.path.join(os.path.abspath(args.dir), f), os.path.join(notok, f))
    batches = {}
    for n in (1, 4, 16, 64):
        path = os.path.join(tmp, f"ids{n}.txt")
        with open(path, "w") as f:
            f.writelines(f"#{(1000 + 2003 * i) % 128256}\n" for i in range(n))
        batches[n] = path
    # The binaries and the tokenizer too: a freshly linked binary's pages
    # sit in the cache in small pieces, and mapping them at each start took
    # 0.7 ms longer than for a copy of the same file (`info` on Llama 3).
    files = sorted(set(shard.values())) + [embscope, bench]
    tokenizer = os.path.join(args.dir, "tokenizer.json")
    if os.path.isfile(tokenizer):
        files.append(tokenizer)
    for f in files:
        refill_cache(f)

    base = dict(os.environ)
    for var in ("EMBSCOPE_KERNEL", "EMBSCOPE_CPU_MASK"):
        base.pop(var, None)
    probe = subprocess.run(
        [embscope, "neighbors", notok, "#1"], env={**base, "EMBSCOPE_KERNEL": "?"},
        capture_output=True, text=True).stderr
    available = probe.strip().rsplit(": ", 1)[1].rstrip(")").split(", ")
    forced = [k for k in available
              if args.all_kernels or k in ("avx2", "avx512", "avx512bf16", "amx", "avx512vnni")]

    cmds = []  # (label, argv, extra env)
    cmds.append(("read embedding", [bench, "read", shard[embed], embed], {}))
    cmds.append(("read head", [bench, "read", shard[head], head], {}))

    def nb(n):
        return [embscope, "--json", "neighbors", notok, "--no-progress", "--batch", batches[n]]

    for n in (1, 4, 16, 64):
        cmds.append((f"{n} q default", nb(n), {}))
        for k in forced:
            cmds.append((f"{n} q {k}", nb(n), {"EMBSCOPE_KERNEL": k}))
    for tag, mask in MASKED:
        for n in (1, 64):
            cmds.append((f"{n} q default, {tag}", nb(n), {"EMBSCOPE_CPU_MASK": mask}))
    cmds.append(("check, no tokenizer", [embscope, "--json", "check", notok, "--no-progress"], {}))
    cmds.append(("check, with tokenizer", [embscope, "--json", "check", args.dir, "--no-progress"], {}))

    times = {label: [] for label, _, _ in cmds}
    cpu = {label: [] for label, _, _ in cmds}
    rss = []
    for rnd in range(args.runs + 1):  # round 0 warms up
        for label, argv, env in cmds:
            # RssAnon is polled in the warm-up round only: the polling
            # takes CPU time from the run it watches.
            sample = rnd == 0 and label == "64 q default"
            ms, cpu_ms, peak = run(argv, {**base, **env}, sample_rss=sample)
            if sample:
                rss.append(peak)
            if rnd > 0:
                times[label].append(ms)
                cpu[label].append(cpu_ms)
    med = {l: statistics.median(t) for l, t in times.items()}
    cpu_med = {l: statistics.median(t) for l, t in cpu.items()}
    read = med["read embedding"]
    print(f"CPU: {cpu_name()}; load average before: {os.getloadavg()[0]:.1f}")
    for k in page_cache_reclaim():
        print(f"note: DAMON pages out unmapped cold page cache here ({k}); the "
              f"shards' cached pages may go between runs (`echo off > {k}/state` "
              "as root pauses it)")
    print(f"{args.runs} interleaved rounds (after one warm-up round), medians [quartiles]\n")
    print("| command | wall ms | quartiles | vs read of the embedding | CPU ms (user + sys) |")
    print("|---|---|---|---|---|")
    for label, _, env in cmds:
        t = times[label]
        q1, _, q3 = statistics.quantiles(t, n=4) if len(t) > 1 else (t[0], 0, t[0])
        envs = " ".join(f"{k}={v}" for k, v in env.items())
        name = f"{label} ({envs})" if envs else label
        print(f"| {name} | {med[label]:.0f} | {q1:.0f}–{q3:.0f} | {med[label] / read:.2f}× "
              f"| {cpu_med[label]:.0f} |")
    both = read + med["read head"]
    print()
    print(f"- 1 query / read: {med['1 q default'] / read:.2f}× (goal ≤ 1.2×)")
    cores = os.cpu_count()
    print(f"- 1 query / read, AVX2 only: {med['1 q default, avx512 masked'] / read:.2f}×")
    for tag in ["default"] + [f"default, {tag}" for tag, _ in MASKED]:
        extra = (med[f"64 q {tag}"] - med[f"1 q {tag}"]) / 63
        extra_cpu = (cpu_med[f"64 q {tag}"] - cpu_med[f"1 q {tag}"]) / 63 / cores
        print(f"- per extra query, {tag}: {extra:.2f} ms wall, {extra_cpu:.2f} ms of CPU time "
              f"per core (goal ≤ 1 ms with AMX, ≤ 2 ms without)")
    for n in (1, 4, 16, 64) if forced else ():  # none on a CPU without AVX2
        best = min(forced, key=lambda k: med[f"{n} q {k}"])
        ratio = med[f"{n} q default"] / med[f"{n} q {best}"]
        print(f"- {n} queries: default / best forced ({best}) = {ratio:.2f} (goal ≤ 1.10)")
    for tag in ("no tokenizer", "with tokenizer"):
        print(f"- check, {tag} / read of both ({both:.0f} ms): "
              f"{med['check, ' + tag] / both:.2f}× (goal ≤ 1.3×)")
    print(f"- peak RssAnon, 64 queries: {max(rss) / 1024:.1f} MiB (goal ≤ 64 MiB)")


if __name__ == "__main__":
    main()
