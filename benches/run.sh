#!/usr/bin/env bash
# Times the hot paths on a Llama-3-shaped matrix (128256 × 4096 BF16,
# 1.05 GB) next to a plain streaming read of the same bytes.
#
#   benches/run.sh [FILE] [RUNS]
#
# FILE defaults to /work/bench-data/llama-bf16.safetensors and is generated
# (tensor `embed`) when missing; keep it outside the repository. Every
# operation runs RUNS times (default 7), each in a fresh process with a warm
# page cache; the table shows medians of the in-process time (includes the
# page faults of a fresh mapping), of the whole process, and the largest
# RssAnon seen. EMBSCOPE_KERNEL=avx512|avx512bf16|amx|... forces a kernel;
# EMBSCOPE_CPU_MASK=amx,avx512bf16,... hides CPU features (time an AMX
# machine as one without AMX). For the performance table and the kernel
# table of docs/kernels.md (commands run end to end, interleaved), use
# benches/table.py.
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=${1:-/work/bench-data/llama-bf16.safetensors}
RUNS=${2:-7}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/work/target-kernel-rel}
BIN=$(cargo bench --locked --bench kernel --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*/kernel-[^"]*"' | cut -d'"' -f4 | tail -1)
[ -f "$FILE" ] || { mkdir -p "$(dirname "$FILE")"; "$BIN" gen "$FILE"; }
cat "$FILE" > /dev/null # warm the page cache

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

printf '%-10s %12s %12s %14s\n' op in-proc-ms process-ms rss-anon-kb
for op in "read" "topk 1" "topk 4" "topk 16" "topk 64" "scan"; do
    inproc=() wall=() rss=()
    for _ in $(seq "$RUNS"); do
        start=$(date +%s%N)
        read -r -a args <<<"$op" # name [NQ]
        line=$("$BIN" "${args[0]}" "$FILE" embed "${args[@]:1}")
        end=$(date +%s%N)
        wall+=($(((end - start) / 1000)))
        inproc+=("$(sed 's/.* ms=\([0-9.]*\).*/\1/' <<<"$line")")
        rss+=("$(sed 's/.*rss_anon_kb=\([0-9]*\).*/\1/' <<<"$line")")
    done
    printf '%-10s %12s %12.1f %14s\n' "$op" \
        "$(printf '%s\n' "${inproc[@]}" | median)" \
        "$(printf '%s\n' "${wall[@]}" | median | awk '{print $1 / 1000}')" \
        "$(printf '%s\n' "${rss[@]}" | sort -n | tail -1)"
done
