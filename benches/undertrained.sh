#!/usr/bin/env bash
# Times `embscope undertrained` on a Llama-3-shaped checkpoint next to a
# plain streaming read of one of its matrices, and the ratio to the budget
# the command must stay within: (streaming passes + 1) x the plain read.
#
#   benches/undertrained.sh [MODEL_DIR] [RUNS]
#
# With BASE=/path/to/another/embscope (an older build, say), each row is
# also timed with it, interleaved with the same reads, on a `base` line;
# with MASK=features (say `avx512bf16`, to time the f32 loops where the
# head pass would use `vdpbf16ps`), with EMBSCOPE_CPU_MASK=features on a
# `mask` line.
#
# MODEL_DIR defaults to /work/bench-data/llama3 (make one with
# `cargo run --release --example gen-fixtures -- --llama3 DIR`). Each run is
# a fresh process with a warm page cache; reads and commands alternate, so
# a busy machine slows both alike. The table shows medians of the wall time
# (ms), of the read by its own clock (read-in) and as a process (read-ps),
# the ratios to the budget with each, and the largest RssAnon seen (polled
# every 10 ms in one more run, not timed), for the default run (head and
# embedding), the same without the reachability test (which builds a
# cut-down tokenizer after scoring), the head alone and the embedding alone;
# then the load average, and the stages of one more default run as `-v`
# prints them (start and duration of each, several run at once).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-/work/bench-data/llama3}
RUNS=${2:-5}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release --quiet
EMB=$CARGO_TARGET_DIR/release/embscope
KERNEL=$(cargo bench --bench kernel --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*/kernel-[^"]*"' | cut -d'"' -f4 | tail -1)
# The shard holding the head, from the index (or the single file).
if [ -f "$MODEL/model.safetensors.index.json" ]; then
    SHARD=$MODEL/$(grep -o '"lm_head.weight": *"[^"]*"' "$MODEL/model.safetensors.index.json" |
        sed 's/.*: *"\(.*\)"/\1/')
else
    SHARD=$MODEL/model.safetensors
fi
# Drop the shards from the page cache and read them back in, so that both
# matrices' pages are cached as one read from disk leaves them (pages
# cached in small pieces took 30 ms more per GiB to map, see table.py).
# The binaries and the tokenizer too: a freshly linked binary's pages sit
# in the cache in small pieces, and mapping them at each start took 0.7 ms
# longer than for a copy of the same file.
for f in "$MODEL"/*.safetensors "$MODEL"/tokenizer.json "$EMB" "$KERNEL" ${BASE:+"$BASE"}; do
    [ -f "$f" ] || continue
    dd if="$f" iflag=nocache count=0 status=none
    cat "$f" >/dev/null
done

# A DAMON monitor with a `pageout` scheme (some cloud VMs run one to hand
# memory back to their host) drops cached pages no process maps between
# runs, and they come back from disk in smaller pieces: say so, as the
# figures then drift (see page_cache_reclaim in table.py).
for k in /sys/kernel/mm/damon/admin/kdamonds/[0-9]*; do
    if [ "$(cat "$k/state" 2>/dev/null)" = on ] &&
        grep -qx pageout "$k"/contexts/*/schemes/*/action 2>/dev/null; then
        echo "note: DAMON pages out unmapped cold page cache here ($k); \`echo off > $k/state\` as root pauses it"
    fi
done

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# Runs "$@", prints its wall time in ms. Nothing else runs meanwhile:
# polling /proc while timing (an awk every 10 ms) slowed the command on 2
# cores.
timed() {
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null
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
    wait "$pid"
    echo "$peak"
}

printf '%-22s %6s %7s %7s %7s %8s %8s %9s\n' run passes ms read-in read-ps ratio-in \
    ratio-ps rss-kb
# One row: "$1" is the binary, "$2" the label prefix, "$3" the mode.
# Two baselines: the read's own figure of the mapped bytes' sum (read-in:
# it leaves out starting the process, mapping the file and unmapping it at
# exit, which the command's time includes), and the read timed as a whole
# process like the command (read-ps, as `benches/table.py` times it).
row() {
    local bin=$1 label=$2 mode=$3 passes reads=() walls=() runs=() peak start end
    # shellcheck disable=SC2086 # $mode is zero, one or two words
    passes=$("$bin" --json -q undertrained "$MODEL" $mode --top 0 | grep -o '"passes": *[0-9]*' | grep -o '[0-9]*$')
    for _ in $(seq "$RUNS"); do
        start=$(date +%s%N)
        reads+=("$("$KERNEL" read "$SHARD" lm_head.weight | sed 's/.* ms=\([0-9.]*\).*/\1/')")
        end=$(date +%s%N)
        walls+=("$(((end - start) / 1000000))")
        # shellcheck disable=SC2086
        runs+=("$(timed "$bin" -q --no-progress undertrained "$MODEL" $mode)")
    done
    # shellcheck disable=SC2086 # one more run, untimed, for the memory
    peak=$(peak_rss "$bin" -q --no-progress undertrained "$MODEL" $mode)
    read_ms=$(printf '%s\n' "${reads[@]}" | median)
    wall_ms=$(printf '%s\n' "${walls[@]}" | median)
    run_ms=$(printf '%s\n' "${runs[@]}" | median)
    ratio() { awk -v a="$run_ms" -v r="$1" -v p="$passes" 'BEGIN {printf "%.2f", a / (r * (p + 1))}'; }
    printf '%-22s %6s %7s %7.0f %7s %8s %8s %9s\n' "$label${mode:-default}" "$passes" "$run_ms" \
        "$read_ms" "$wall_ms" "$(ratio "$read_ms")" "$(ratio "$wall_ms")" "$peak"
}

for mode in "" "--no-reachable" "--matrix head" "--matrix embed"; do
    row "$EMB" "" "$mode"
    if [ -n "${BASE:-}" ]; then
        row "$BASE" "base " "$mode"
    fi
    if [ -n "${MASK:-}" ]; then
        EMBSCOPE_CPU_MASK=$MASK row "$EMB" "mask " "$mode"
    fi
done

uptime
"$EMB" -v --no-progress undertrained "$MODEL" 2>&1 >/dev/null | grep '^stage:'
