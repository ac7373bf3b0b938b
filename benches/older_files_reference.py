#!/usr/bin/env python3
"""Second opinion on reading older tokenizer files (vocab.txt; vocab.json +
merges.txt; a Llama tokenizer.model): loads copies of the `bert-vocab-txt`,
`gpt2-vocab-merges` and `sentencepiece-model` fixtures, under a range of tokenizer_config.json settings and classes, with
`transformers.AutoTokenizer`, and compares its ids for a set of texts (with
and without special tokens), its length and its added tokens with what
embscope gives (`lookup --text --json`, `info --json`). The copies get a
400-row embedding so that ids transformers appends past the vocabulary can
be looked up. Needs `pip install transformers sentencepiece protobuf` (no
PyTorch) and a built
binary (default target/release/embscope). Prints one line per case and
exits 1 on a difference; a text both reject counts as agreeing.

    benches/older_files_reference.py [EMBSCOPE]
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from transformers import AutoTokenizer

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/embscope"
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
TEXTS = [
    "King and QUEEN",
    "the kings ran.",
    "Ünïcödé naïve kingly",
    "[MASK] of a",
    "The king and the queen",
    " princess of Paris<|end_of_text|>",
    "naïve 東京\n\tkings!",
    "hello   world  ",
    "<s> king </s> <mask> queen",
    "I'm here, aren't I?",
]
BOS = "<|begin_of_text|>"
EOS = "<|end_of_text|>"
CASES = [
    ("bert-vocab-txt", None),
    ("bert-vocab-txt", {"tokenizer_class": "BertTokenizer", "do_lower_case": False}),
    ("bert-vocab-txt", {"tokenizer_class": "BertTokenizer", "strip_accents": False}),
    ("bert-vocab-txt", {"tokenizer_class": "ElectraTokenizer", "tokenize_chinese_chars": False}),
    ("bert-vocab-txt", {"tokenizer_class": "MPNetTokenizer"}),
    ("bert-vocab-txt", {"tokenizer_class": "FunnelTokenizer"}),
    ("bert-vocab-txt", {"extra_special_tokens": ["<x>", "[MASK]"]}),
    ("gpt2-vocab-merges", None),
    ("gpt2-vocab-merges", {"tokenizer_class": "GPT2Tokenizer", "add_prefix_space": True}),
    ("gpt2-vocab-merges", {"tokenizer_class": "GPT2Tokenizer", "add_bos_token": True, "bos_token": BOS}),
    (
        "gpt2-vocab-merges",
        {
            "tokenizer_class": "GPT2TokenizerFast",
            "add_bos_token": True,
            "bos_token": BOS,
            "added_tokens_decoder": {"339": {"content": BOS, "special": True}},
        },
    ),
    ("gpt2-vocab-merges", {"tokenizer_class": "CodeGenTokenizer", "additional_special_tokens": ["<e>", BOS]}),
    ("gpt2-vocab-merges", {"tokenizer_class": "RobertaTokenizer"}),
    ("gpt2-vocab-merges", {"tokenizer_class": "RobertaTokenizer", "cls_token": BOS, "sep_token": EOS}),
    ("gpt2-vocab-merges", {"tokenizer_class": "BartTokenizer", "cls_token": BOS}),
    ("gpt2-vocab-merges", {"tokenizer_class": "DebertaTokenizer"}),
    ("sentencepiece-model", {"tokenizer_class": "LlamaTokenizer"}),
    ("sentencepiece-model", {"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": True}),
    ("sentencepiece-model", {"tokenizer_class": "LlamaTokenizer", "legacy": True, "add_eos_token": True}),
    ("sentencepiece-model", {"tokenizer_class": "LlamaTokenizer", "add_prefix_space": False}),
]


def copy_with_big_matrix(fixture, config):
    """A copy of the fixture with a 400-row embedding and `config` as its
    tokenizer_config.json (when given)."""
    d = tempfile.mkdtemp()
    src = os.path.join(FIXTURES, fixture)
    for f in os.listdir(src):
        shutil.copy(os.path.join(src, f), d)
    name = {
        "bert-vocab-txt": "embeddings.word_embeddings.weight",
        "gpt2-vocab-merges": "transformer.wte.weight",
    }.get(fixture, "model.embed_tokens.weight")
    rows, cols = 400, 32
    data = b"".join(struct.pack("<f", (i % 997) / 997 + 0.001) for i in range(rows * cols))
    header = json.dumps({name: {"dtype": "F32", "shape": [rows, cols], "data_offsets": [0, len(data)]}})
    header = header.encode() + b" " * (-len(header) % 8)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
    if config is not None:
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump(config, f)
    return d


def embscope(*args):
    r = subprocess.run([BIN, "--json", *args], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None


def ids(d, text, special):
    args = ["lookup", d, "--text", text] + (["--add-special-tokens"] if special else [])
    v = embscope(*args)
    return None if v is None else [r["id"] for r in v["rows"]]


def main():
    failed = 0
    for fixture, config in CASES:
        d = copy_with_big_matrix(fixture, config)
        tok = AutoTokenizer.from_pretrained(d)
        diffs = []
        for text in TEXTS:
            for special in (False, True):
                try:
                    want = tok.encode(text, add_special_tokens=special)
                except Exception:
                    want = None
                got = ids(d, text, special)
                if want != got:
                    diffs.append(f"{text!r} special={special}: transformers {want}, embscope {got}")
        info = embscope("info", d)["tokenizer"]
        if (len(tok), len(tok.added_tokens_decoder)) != (info["size"], info["added"]):
            diffs.append(
                f"size/added: transformers {len(tok)}/{len(tok.added_tokens_decoder)}, "
                f"embscope {info['size']}/{info['added']}"
            )
        label = f"{fixture} {json.dumps(config)}"
        print(f"{'ok  ' if not diffs else 'DIFF'} {label} ({type(tok).__name__})")
        for line in diffs:
            print("     " + line)
        failed += bool(diffs)
        shutil.rmtree(d)
    sys.exit(1 if failed else 0)


main()
