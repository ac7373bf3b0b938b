#!/usr/bin/env bash
# Minutes of mutation fuzzing of one untrusted input; fails on the first
# panic, naming the mutant and its seed:
#   gguf         the GGUF reader (tests/gguf_fuzz.rs): byte flips, integer
#                rewrites, length blow-ups, truncations and insertions of
#                the GGUF fixtures
#   tokenizer    the tokenizer.json loader, the conversion of older files
#                (vocab.txt, vocab.json, merges.txt) and the vocabulary's queries
#                (tests/tokenizer_fuzz.rs): JSON-significant bytes, UTF-8
#                fragments, lines and numbers of the fixture tokenizers
#   safetensors  the checkpoint opener and the commands after it
#                (tests/safetensors_fuzz.rs): header lengths, dtypes, shapes
#                and offsets, truncations, the index's weight map
#   side_files   tokenizer_config.json, special_tokens_map.json and
#                generation_config.json beside an unmutated tokenizer.json
#                (tests/tokenizer_fuzz.rs): ids, tokens, added_tokens_decoder
#                keys and entries, eos lists, deep nesting, and the text
# All but gguf keep the panicking input under /tmp (the message says where).
#
#   benches/fuzz.sh gguf|tokenizer|safetensors|side_files [SECONDS] [SEED]
#                                                        (default 180 s, seed 12345)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
    gguf | tokenizer | safetensors | side_files) ;;
    *)
        echo "usage: $0 gguf|tokenizer|safetensors|side_files [SECONDS] [SEED]" >&2
        exit 2
        ;;
esac
EMBSCOPE_FUZZ_SECS=${2:-180} EMBSCOPE_FUZZ_SEED=${3:-12345} \
    cargo test --release --test cli "fuzz_$1_for_minutes" -- --ignored --nocapture
