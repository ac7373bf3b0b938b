#!/usr/bin/env python3
"""Second opinion on the GGUF fixtures: reads every tensor-bearing fixture
with the `gguf` package from PyPI (llama.cpp's own Python reader), and
compares its dequantized `token_embd.weight` (and `output.weight`) with what
`embscope lookup --json` returns for every row. Needs `pip install gguf`
and a built binary (default target/debug/embscope).

    benches/gguf_reference.py [EMBSCOPE]
"""

import glob
import json
import subprocess
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/debug/embscope"
# The types embscope lists but does not decode (their codebooks are not
# built in): a vocabulary matrix of one is an error (see tests/gguf.rs).
NOT_DECODED = {"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0", "MXFP4"}
worst = 0.0
for path in sorted(glob.glob("fixtures/gguf/*.gguf")):
    reader = GGUFReader(path)
    for t in reader.tensors:
        if t.name not in ("token_embd.weight", "output.weight"):
            continue
        if t.tensor_type.name in NOT_DECODED:
            print(f"{path} {t.name} {t.tensor_type.name}: skipped (embscope does not decode it)")
            continue
        want = dequantize(t.data, t.tensor_type).reshape(-1, int(t.shape[0]))
        rows = want.shape[0]
        matrix = "embed" if t.name == "token_embd.weight" else "head"
        args = [BIN, "--json", "lookup", path, "--matrix", matrix, "--id"]
        args += [str(i) for i in range(rows)]
        out = json.loads(subprocess.run(args, check=True, capture_output=True).stdout)
        got = np.array([r["values"] for r in out["rows"]], dtype=np.float32)
        diff = np.nanmax(np.abs(got - want)) if got.size else 0.0
        same_nan = np.array_equal(np.isnan(got), np.isnan(want))
        print(f"{path} {t.name} {t.tensor_type.name} {got.shape}: max |diff| {diff:.3g}, NaN positions equal: {same_nan}")
        worst = max(worst, float(diff))
        if diff > 0 or not same_nan:
            sys.exit(f"mismatch in {path} {t.name}")
print(f"all equal (max |diff| {worst})")
