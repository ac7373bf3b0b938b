#!/usr/bin/env bash
# Minutes of mutation fuzzing of the GGUF reader (tests/gguf_fuzz.rs): byte
# flips, integer rewrites, length blow-ups, truncations and insertions of the
# GGUF fixtures; fails on the first panic.
#
#   benches/fuzz-gguf.sh [SECONDS] [SEED]     (default 180 s, seed 12345)
set -euo pipefail
cd "$(dirname "$0")/.."
EMBSCOPE_FUZZ_SECS=${1:-180} EMBSCOPE_FUZZ_SEED=${2:-12345} \
    cargo test --release --test cli fuzz_gguf_for_minutes -- --ignored --nocapture
