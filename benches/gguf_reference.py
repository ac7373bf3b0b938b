#!/usr/bin/env python3
"""Second opinion on embscope's GGUF decoding from the `gguf` package on
PyPI (llama.cpp's own Python reader and dequantizers): reads every
tensor-bearing fixture and compares its dequantized `token_embd.weight`
(and `output.weight`) with what `embscope lookup --json` returns for every
row; then, for every block-quantized type the package knows, writes a
small GGUF file whose embedding is random bytes of that type (NaN,
infinite and subnormal scales among them) and compares every value, bit
for bit (a NaN or an infinity with the JSON's null). Needs `pip install gguf` and a built binary
(default target/debug/embscope).

    benches/gguf_reference.py [EMBSCOPE]
"""

import glob
import json
import os
import subprocess
import sys
import tempfile

import warnings

import numpy as np
from gguf import GGML_QUANT_SIZES, GGUFReader, GGUFWriter
from gguf.quants import dequantize

# Random scales make NaN and infinities on purpose.
warnings.filterwarnings("ignore", category=RuntimeWarning)
BIN = sys.argv[1] if len(sys.argv) > 1 else "target/debug/embscope"


def rows_of(path, matrix, rows):
    args = [BIN, "--json", "lookup", path, "--matrix", matrix, "--id"]
    args += [str(i) for i in range(rows)]
    out = json.loads(subprocess.run(args, check=True, capture_output=True).stdout)
    return np.array([r["values"] for r in out["rows"]], dtype=np.float32)


worst = 0.0
for path in sorted(glob.glob("fixtures/gguf/*.gguf")):
    reader = GGUFReader(path)
    for t in reader.tensors:
        if t.name not in ("token_embd.weight", "output.weight"):
            continue
        want = dequantize(t.data, t.tensor_type).reshape(-1, int(t.shape[0]))
        matrix = "embed" if t.name == "token_embd.weight" else "head"
        got = rows_of(path, matrix, want.shape[0])
        diff = np.nanmax(np.abs(got - want)) if got.size else 0.0
        same_nan = np.array_equal(np.isnan(got), np.isnan(want))
        print(f"{path} {t.name} {t.tensor_type.name} {got.shape}: max |diff| {diff:.3g}, NaN positions equal: {same_nan}")
        worst = max(worst, float(diff))
        if diff > 0 or not same_nan:
            sys.exit(f"mismatch in {path} {t.name}")
print(f"fixtures: all equal (max |diff| {worst})")

# Random blocks of every block-quantized type: 16 rows of 512 values.
rng = np.random.default_rng(2026)
ROWS, COLS = 16, 512
with tempfile.TemporaryDirectory() as tmp:
    for qtype, (block, size) in GGML_QUANT_SIZES.items():
        if block == 1:
            continue
        raw = rng.integers(0, 256, size=ROWS * COLS // block * size, dtype=np.uint8)
        path = os.path.join(tmp, f"{qtype.name}.gguf")
        w = GGUFWriter(path, "llama")
        w.add_tensor("token_embd.weight", raw.reshape(ROWS, -1), raw_dtype=qtype)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        try:
            want = dequantize(raw, qtype).reshape(ROWS, COLS)
        except NotImplementedError:
            print(f"random {qtype.name} blocks: skipped (the package does not dequantize it)")
            continue
        try:
            got = rows_of(path, "embed", ROWS)
        except subprocess.CalledProcessError as e:
            sys.exit(f"{qtype.name}: embscope failed: {e.stderr.decode().strip()}")
        # JSON has no NaN or infinity: embscope writes null for both.
        odd = ~np.isfinite(want)
        same = np.array_equal(odd, np.isnan(got)) and np.array_equal(
            want[~odd].view(np.uint32), got[~odd].view(np.uint32)
        )
        print(f"random {qtype.name} blocks ({ROWS} x {COLS}, {odd.sum()} not finite): {'bit-identical' if same else 'DIFFERENT'}")
        if not same:
            bad = np.argwhere((want != got) & ~odd)[:3]
            sys.exit(f"{qtype.name}: first differences at {bad.tolist()}: {want[tuple(bad.T)]} vs {got[tuple(bad.T)]}")
