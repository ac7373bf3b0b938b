#!/usr/bin/env bash
# Times `embscope diff` on a Llama-3-shaped checkpoint against itself and
# against a fine-tune of it, next to a plain streaming read of the four
# matrices each compares (two models, embedding and head each), and the
# ratio to that read (the budget is 1.3).
#
#   benches/diff.sh [MODEL_DIR] [TUNED_DIR] [RUNS]
#
# MODEL_DIR defaults to /work/bench-data/llama3 (make one with
# `cargo run --release --example gen-fixtures -- --llama3 DIR`), TUNED_DIR
# to MODEL_DIR-tuned, written here when missing (with `--llama3-tuned`:
# one row in 64 changed, 256 rows appended of each init). Each run is a
# fresh process with a warm page cache; reads and commands alternate, so
# a busy machine slows both alike. The table shows medians of the wall
# time (ms), of the four reads by their own clocks (read-in: without
# starting the processes, mapping the files and unmapping them at exit,
# which the command's time includes) and as processes (read-ps), the
# ratios to each, and the largest RssAnon seen (polled every 10 ms in one
# more run, not timed).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-/work/bench-data/llama3}
TUNED=${2:-$MODEL-tuned}
RUNS=${3:-5}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release --locked --quiet
EMB=$CARGO_TARGET_DIR/release/embscope
KERNEL=$(cargo bench --bench kernel --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*/kernel-[^"]*"' | cut -d'"' -f4 | tail -1)
if [ ! -d "$TUNED" ]; then
    cargo run --release --locked --quiet --example gen-fixtures -- --llama3-tuned "$MODEL" "$TUNED"
fi

# The shard holding `tensor` in the model in `dir`, from its index.
shard() {
    grep -o "\"$2\": *\"[^\"]*\"" "$1/model.safetensors.index.json" | sed 's/.*: *"\(.*\)"/\1/'
}

# Both models' files read back in from disk in one piece each (pages
# cached in small pieces take longer to map, see table.py), and the
# binaries.
for f in "$MODEL"/*.safetensors "$TUNED"/*.safetensors "$MODEL"/tokenizer.json \
    "$TUNED"/tokenizer.json "$EMB" "$KERNEL"; do
    dd if="$f" iflag=nocache count=0 status=none
    cat "$f" >/dev/null
done

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# Runs "$@", prints its wall time in ms.
timed() {
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null || [ $? -eq 1 ]
    end=$(date +%s%N)
    echo "$(((end - start) / 1000000))"
}

# Runs "$@", prints the largest RssAnon seen (polled every 10 ms), in kB.
peak_rss() {
    local peak=0 rss
    "$@" >/dev/null &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        rss=$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        [ "${rss:-0}" -gt "$peak" ] && peak=$rss
        sleep 0.01
    done
    wait "$pid" || true
    echo "$peak"
}

# The plain read of both matrices of the models in "$@", one process per
# matrix: prints the sum of the reads' own times (ms) and the wall time
# of the four processes (ms).
read_all() {
    local start end own=0 ms dir t
    start=$(date +%s%N)
    for dir in "$@"; do
        for t in model.embed_tokens.weight lm_head.weight; do
            ms=$("$KERNEL" read "$dir/$(shard "$dir" "$t")" "$t" | sed 's/.* ms=\([0-9.]*\).*/\1/')
            own=$(awk -v a="$own" -v b="$ms" 'BEGIN {print a + b}')
        done
    done
    end=$(date +%s%N)
    echo "$own $(((end - start) / 1000000))"
}

printf '%-8s %7s %8s %8s %9s %9s %8s\n' pair ms read-in read-ps ratio-in ratio-ps rss-kb
row() {
    local label=$1 other=$2 ins=() pss=() runs=() r peak
    for _ in $(seq "$RUNS"); do
        read -r -a r <<<"$(read_all "$MODEL" "$other")"
        ins+=("${r[0]}")
        pss+=("${r[1]}")
        runs+=("$(timed "$EMB" -q --no-progress diff "$MODEL" "$other")")
    done
    peak=$(peak_rss "$EMB" -q --no-progress diff "$MODEL" "$other")
    local run_ms read_in read_ps
    run_ms=$(printf '%s\n' "${runs[@]}" | median)
    read_in=$(printf '%s\n' "${ins[@]}" | median)
    read_ps=$(printf '%s\n' "${pss[@]}" | median)
    ratio() { awk -v a="$run_ms" -v r="$1" 'BEGIN {printf "%.2f", a / r}'; }
    printf '%-8s %7s %8.0f %8s %9s %9s %8s\n' "$label" "$run_ms" "$read_in" "$read_ps" \
        "$(ratio "$read_in")" "$(ratio "$read_ps")" "$peak"
}

row itself "$MODEL"
row tuned "$TUNED"
uptime
