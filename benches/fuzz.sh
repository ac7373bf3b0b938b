#!/usr/bin/env bash
# Minutes of mutation fuzzing of one untrusted input; fails on the first
# panic, naming the mutant and its seed:
#   gguf         the GGUF reader (tests/gguf_fuzz.rs): byte flips, integer
#                rewrites, length blow-ups, truncations and insertions of
#                the GGUF fixtures
#   tokenizer    the tokenizer.json loader and the vocabulary's queries
#                (tests/tokenizer_fuzz.rs): JSON-significant bytes, UTF-8
#                fragments, lines and numbers of the fixture tokenizers
#   safetensors  the checkpoint opener and the commands after it
#                (tests/safetensors_fuzz.rs): header lengths, dtypes, shapes
#                and offsets, truncations, the index's weight map
# The last two keep the panicking input under /tmp (the message says where).
#
#   benches/fuzz.sh gguf|tokenizer|safetensors [SECONDS] [SEED]
#                                             (default 180 s, seed 12345)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
    gguf | tokenizer | safetensors) ;;
    *)
        echo "usage: $0 gguf|tokenizer|safetensors [SECONDS] [SEED]" >&2
        exit 2
        ;;
esac
EMBSCOPE_FUZZ_SECS=${2:-180} EMBSCOPE_FUZZ_SEED=${3:-12345} \
    cargo test --release --test cli "fuzz_$1_for_minutes" -- --ignored --nocapture
