#!/usr/bin/env bash
# The Python module beside the command line and beside the numpy script a
# user writes today, on the Llama-3-shaped checkpoint: whole processes
# interleaved (start-up, opening and the tokenizer included), then the
# calls beside the CLI's commands, interleaved in one process.
#
#   bash python/benches/run.sh [DIR] [RUNS]
#
# DIR is the checkpoint `cargo run --release --example gen-fixtures --
# --llama3 DIR` writes (default /work/bench-data/llama3). The module is
# installed as a user installs it (`pip install ./python`, a release
# build) into a virtual environment under target/.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-/work/bench-data/llama3}
RUNS=${2:-15}
ID=11734
cargo build --release --locked
BIN=$PWD/target/release/embscope
VENV=$PWD/target/bench-venv
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check ./python
PY=$VENV/bin/python
# The embedding's shard, as the numpy script takes it.
SHARD=$DIR/$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["weight_map"]["model.embed_tokens.weight"])' "$DIR/model.safetensors.index.json")
cat "$DIR"/*.safetensors "$DIR/tokenizer.json" > /dev/null # warm the page cache

echo "== whole processes: start-up, opening and the tokenizer included"
python3 benches/interleaved.py -r "$RUNS" \
    "$BIN lookup $DIR --id $ID --format json" \
    "$PY -c 'import embscope; embscope.open(\"$DIR\").lookup([$ID])'" \
    "$PY -c 'import numpy'"
python3 benches/interleaved.py -r "$RUNS" \
    "$BIN neighbors $DIR #$ID -k 10 --json" \
    "$PY -c 'import embscope; embscope.open(\"$DIR\").neighbors($ID, k=10)'" \
    "$PY benches/numpy_neighbors.py $SHARD model.embed_tokens.weight $ID 10"

echo "== the calls beside the CLI's commands"
"$PY" python/benches/calls.py "$BIN" "$DIR" "$ID" "$RUNS"
