"""What the reference scripts share: the texts they encode with embscope
and with the library each compares against (several scripts, code,
numbers, odd whitespace, control characters and emoji), a zero matrix to
put a tokenizer beside, and the comparison of `lookup --text` ids."""

import json
import struct
import subprocess
from pathlib import Path

TEXTS = [
    "Hello, world! Paris is the capital of France.",
    "  leading spaces and trailing   ",
    "line one\nline two\r\n\n\tindented",
    "Numbers: 1234567890, 3.14159, -42, 1e-9, 2026-11-26",
    "def f(x):\n    return x ** 2  # square\n",
    "fn main() { println!(\"{}\", 1 + 2); }",
    "Größenordnung, naïve café, Ærøskøbing",
    "Москва — столица России.",
    "東京は日本の首都です。北京是中国的首都。",
    "서울은 한국의 수도입니다.",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "emoji 🙂🚀👩‍👩‍👧 and ZWJ",
    "URLs: https://example.com/a?b=c&d=e#frag",
    "CAPS LOCK and MiXeD cAsE and camelCaseWords",
    "'s 're 've 'll 'd n't",
    "tabs\t\tand\u00a0non-breaking\u2009spaces",
    "\u0001\u0002 control chars",
    "a" * 300,
    " ".join(str(i) for i in range(100)),
]


def zero_matrix(path: Path, tensor: str, rows: int, cols: int = 2) -> None:
    """Writes a safetensors file at `path` holding one F32 tensor of zeros."""
    size = rows * cols * 4
    header = json.dumps({tensor: {"dtype": "F32", "shape": [rows, cols], "data_offsets": [0, size]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + bytes(size))


def embscope_json(binary: str, *args):
    """Runs `binary --json ARGS`: (its parsed output, None) on success,
    (None, its error) otherwise."""
    out = subprocess.run([binary, "--json", *args], capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip()
    return json.loads(out.stdout), None


def encodings_differ(binary: str, model: Path, encode, reference: str, texts) -> int:
    """Compares the ids of `lookup --text` on `model` with `encode(text)`
    (the library named `reference`) for each text; prints each
    difference, returns their count."""
    diffs = 0
    for text in texts:
        want = encode(text)
        got, err = embscope_json(binary, "lookup", str(model), f"--text={text}")
        got = [r["id"] for r in got["rows"]] if got else err
        if got != want:
            diffs += 1
            print(f"  {model.name}: {text!r}: embscope {got} {reference} {want}")
    return diffs
