#!/usr/bin/env bash
# One neighbour query on Llama-3-shaped GGUF embeddings (128256 × 4096, Q8_0,
# Q6_K, Q4_K and IQ3_S), next to a plain read of the tensor's bytes and their
# dequantization alone. The files come from
#   cargo run --release --example gen-fixtures -- --llama3-gguf DIR
#
#   benches/gguf.sh [DIR] [RUNS]
#
# DIR defaults to /work/bench-data/gguf; each op runs RUNS times (default 5)
# in a fresh process with a warm page cache; medians of the in-process time
# and the largest RssAnon seen. With BASE=/path/to/another/gguf-bench-binary
# (built from an older commit, say), each op is also timed with it, its runs
# interleaved with this build's, in a `base-ms` column.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/work/bench-data/gguf}
RUNS=${2:-5}
BIN=$(cargo bench --bench gguf --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*/gguf-[^"]*"' | cut -d'"' -f4 | tail -1)
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
ms_of() { sed 's/.* ms=\([0-9.]*\).*/\1/' <<<"$1"; }
printf '%-16s %-10s %12s %14s %10s\n' file op in-proc-ms rss-anon-kb base-ms
for f in llama3-q8_0.gguf llama3-q6_k.gguf llama3-q4_k.gguf llama3-iq3_s.gguf; do
    [ -f "$DIR/$f" ] || continue
    cat "$DIR/$f" >/dev/null # warm the page cache
    for op in "read" "dequant" "topk 1" "topk 16"; do
        ms=() rss=() base=()
        for _ in $(seq "$RUNS"); do
            read -r -a args <<<"$op"
            line=$("$BIN" "${args[0]}" "$DIR/$f" "${args[@]:1}")
            ms+=("$(ms_of "$line")")
            rss+=("$(sed 's/.*rss_anon_kb=\([0-9]*\).*/\1/' <<<"$line")")
            if [ -n "${BASE:-}" ]; then
                base+=("$(ms_of "$("$BASE" "${args[0]}" "$DIR/$f" "${args[@]:1}")")")
            fi
        done
        printf '%-16s %-10s %12s %14s %10s\n' "$f" "$op" \
            "$(printf '%s\n' "${ms[@]}" | median)" \
            "$(printf '%s\n' "${rss[@]}" | sort -n | tail -1)" \
            "$(if [ -n "${BASE:-}" ]; then printf '%s\n' "${base[@]}" | median; else echo -; fi)"
    done
done
