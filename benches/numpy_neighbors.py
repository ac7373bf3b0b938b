#!/usr/bin/env python3
"""The baseline embscope's `neighbors` is measured against: the best plain
numpy script, cosine top-k over a memory-mapped safetensors BF16/F16/F32
matrix, converting in chunks (no full f32 copy).

usage: numpy_neighbors.py SHARD TENSOR ID [K] [NQUERIES]
"""
import json
import struct
import sys

import numpy as np


def open_matrix(path, name):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    t = header[name]
    rows, cols = t["shape"]
    start = 8 + n + t["data_offsets"][0]
    dtype = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32}[t["dtype"]]
    m = np.memmap(path, dtype=dtype, mode="r", offset=start, shape=(rows, cols))
    return m, t["dtype"]


def to_f32(block, dtype):
    if dtype == "BF16":
        return (block.astype(np.uint32) << 16).view(np.float32)
    return block.astype(np.float32)


def main():
    path, name, qid = sys.argv[1], sys.argv[2], int(sys.argv[3])
    k = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    nq = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    m, dtype = open_matrix(path, name)
    q = to_f32(np.asarray(m[qid : qid + nq]), dtype)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    scores = np.empty((nq, m.shape[0]), dtype=np.float32)
    chunk = 8192
    for s in range(0, m.shape[0], chunk):
        b = to_f32(np.asarray(m[s : s + chunk]), dtype)
        norms = np.linalg.norm(b, axis=1)
        norms[norms == 0] = 1
        scores[:, s : s + chunk] = (q @ b.T) / norms
    for i in range(nq):
        scores[i, qid + i] = -np.inf
        top = np.argpartition(-scores[i], k)[:k]
        top = top[np.argsort(-scores[i][top], kind="stable")]
        print(qid + i, [(int(t), round(float(scores[i][t]), 4)) for t in top])


if __name__ == "__main__":
    main()
