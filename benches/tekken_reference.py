#!/usr/bin/env python3
"""Checks embscope's reading of Mistral's tekken.json against
mistral_common, the library Mistral's own tools encode with.

    pip install mistral-common
    python3 benches/tekken_reference.py [target/release/embscope]

Each tekken.json that mistral_common ships (Mistral Nemo's, Pixtral's) is
put in a temporary model directory beside a small random
`consolidated.safetensors` with as many rows as its vocabulary; then, for
texts in several scripts, code, numbers, odd whitespace and emoji, and for
the token strings of a sample of ids, the ids of `embscope lookup --text`
are compared with `Tekkenizer.encode(text, bos=False, eos=False)`, and the
token strings of `embscope lookup --id` with `Tekkenizer.id_to_piece`.
With llama.cpp's `gguf` package installed (`pip install gguf`), the same
vocabulary is also written as a GGUF file's metadata, as llama.cpp's
converter writes Mistral Nemo's (`tokenizer.ggml.pre` = `tekken`, the
merges transformers derives from the ranks), and its `--text` ids compared
too. Prints one line per file and every difference; exits 1 on any.
"""

import json
import random
import sys
import tempfile
from pathlib import Path

from mistral_common.tokens.tokenizers.tekken import Tekkenizer
import mistral_common

from reference_common import TEXTS, embscope_json, encodings_differ, zero_matrix

EMBSCOPE = sys.argv[1] if len(sys.argv) > 1 else "target/release/embscope"


def model_dir(tekken: Path, rows: int, root: Path) -> Path:
    d = root / tekken.stem
    d.mkdir()
    (d / "tekken.json").write_bytes(tekken.read_bytes())
    zero_matrix(d / "consolidated.safetensors", "tok_embeddings.weight", rows)
    (d / "params.json").write_text(json.dumps({"dim": 2, "vocab_size": rows}))
    return d


def gguf_file(tekken: Path, tok, path: Path) -> bool:
    """Writes `tekken`'s vocabulary as GGUF metadata at `path`; False
    without the `gguf` package."""
    try:
        import gguf
        import numpy as np
    except ImportError:
        return False
    import base64

    doc = json.loads(tekken.read_text())
    n_special = tok.num_special_tokens
    ranks = {base64.b64decode(x["token_bytes"]): x["rank"] for x in doc["vocab"][: tok.n_words - n_special]}
    # GPT-2's bytes_to_unicode.
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    chars = {b: chr(b) for b in printable}
    chars.update({b: chr(256 + i) for i, b in enumerate(b for b in range(256) if b not in printable)})
    text = lambda b: "".join(chars[c] for c in b)
    # transformers' TikTokenConverter: every split into two tokens, by the
    # rank of the token, then of the parts.
    merges = []
    for token, rank in ranks.items():
        splits = [(token[:i], token[i:]) for i in range(1, len(token)) if token[:i] in ranks and token[i:] in ranks]
        merges += sorted(((rank, ranks[a], ranks[b], a, b) for a, b in splits))
    merges.sort(key=lambda m: m[0])
    tokens = [tok.id_to_piece(i) for i in range(n_special)] + [text(b) for b in sorted(ranks, key=ranks.get)]
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("tekken")
    w.add_token_list(tokens)
    w.add_token_types([3] * n_special + [1] * len(ranks))
    w.add_token_merges([f"{text(a)} {text(b)}" for *_, a, b in merges])
    w.add_bos_token_id(tok.bos_id)
    w.add_eos_token_id(tok.eos_id)
    w.add_tensor("token_embd.weight", np.zeros((tok.n_words, 2), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return True


def main():
    data = Path(mistral_common.__file__).parent / "data"
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for tekken in sorted(data.glob("tekken_*.json")):
            tok = Tekkenizer.from_file(tekken)
            d = model_dir(tekken, tok.n_words, Path(tmp))
            rng = random.Random(7)
            ids = sorted(rng.sample(range(tok.num_special_tokens, tok.n_words), 40))
            texts = TEXTS + [tok.id_to_piece(i) for i in ids if "\ufffd" not in tok.id_to_piece(i)]
            encode = lambda text: tok.encode(text, bos=False, eos=False)
            diffs = encodings_differ(EMBSCOPE, d, encode, "mistral_common", texts)
            pieces, err = embscope_json(EMBSCOPE, "lookup", str(d), *[f"--id={i}" for i in [0, 1, 2, 999] + ids])
            for row in (pieces or {}).get("rows", []):
                want = tok.id_to_piece(row["id"])
                if row["token"] != want and "\ufffd" not in want:
                    diffs += 1
                    print(f"  {tekken.name}: id {row['id']}: embscope {row['token']!r} mistral_common {want!r}")
            print(f"{tekken.name}: {len(texts)} texts, {len(ids) + 4} ids, {tok.n_words} tokens: {diffs} differences")
            as_gguf = Path(tmp) / f"{tekken.stem}.gguf"
            if gguf_file(tekken, tok, as_gguf):
                gguf_diffs = encodings_differ(EMBSCOPE, as_gguf, encode, "mistral_common", TEXTS)
                print(f"{as_gguf.name} (pre `tekken`): {len(TEXTS)} texts: {gguf_diffs} differences")
                diffs += gguf_diffs
            bad += diffs
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
