"""lookup and resolve: the stored rows, as safetensors and numpy read them."""

import json
import struct

import numpy as np
import pytest
from safetensors.numpy import load_file

import embscope
from conftest import cli_json, fixture


def raw_tensor(path, name):
    """A tensor of a safetensors file read with numpy alone: BF16, which
    numpy has no type for, widened to float32 exactly."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        t = header[name]
        start, end = t["data_offsets"]
        f.seek(8 + n + start)
        data = f.read(end - start)
    assert t["dtype"] == "BF16"
    bits = np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16
    return bits.view(np.float32).reshape(t["shape"])


@pytest.mark.parametrize(
    "model, file, name",
    [
        ("gpt2-tied", "model.safetensors", "transformer.wte.weight"),
        ("qwen-f16-tied", "model.safetensors", "model.embed_tokens.weight"),
        ("bert", "model.safetensors", "embeddings.word_embeddings.weight"),
    ],
)
def test_rows_equal_what_safetensors_reads(model, file, name):
    expected = load_file(fixture(model) + "/" + file)[name].astype(np.float32)
    m = embscope.open(fixture(model))
    ids = [0, 5, expected.shape[0] - 1, 5]
    got = m.lookup(ids)
    assert got.dtype == np.float32
    assert got.shape == (4, expected.shape[1])
    np.testing.assert_array_equal(got, expected[ids])


def test_bf16_rows_and_the_head(llama):
    index = json.load(open(fixture("llama-sharded") + "/model.safetensors.index.json"))
    wm = index["weight_map"]
    embed = raw_tensor(fixture("llama-sharded") + "/" + wm["model.embed_tokens.weight"], "model.embed_tokens.weight")
    head = raw_tensor(fixture("llama-sharded") + "/" + wm["lm_head.weight"], "lm_head.weight")
    np.testing.assert_array_equal(llama.lookup(list(range(10))), embed[:10])
    np.testing.assert_array_equal(llama.lookup([7, 3], matrix="head"), head[[7, 3]])
    np.testing.assert_array_equal(llama.lookup(np.arange(3)), embed[:3])


def test_queries_name_the_rows_neighbors_reads(llama):
    queries = ["Paris", "#11", 12, "=ĠParis", " king"]
    answers = cli_json("neighbors", fixture("llama-sharded"), "Paris", "#11", "#12", "=ĠParis", " king")["queries"]
    expected = [a["ids"][0] for a in answers]
    assert llama.resolve(queries) == expected
    np.testing.assert_array_equal(llama.lookup(queries), llama.lookup(expected))
    assert llama.resolve(291) == [291]


def test_lookup_equals_the_cli(llama):
    doc = cli_json("lookup", fixture("llama-sharded"), "--text", "Paris is in France")
    ids = [r["id"] for r in doc["rows"]]
    assert llama.resolve(text="Paris is in France") == ids
    got = llama.lookup(text="Paris is in France")
    np.testing.assert_array_equal(got, np.array([r["values"] for r in doc["rows"]], dtype=np.float32))


def test_arrays_are_copies(llama):
    a = llama.lookup([1, 2])
    assert a.flags.owndata and a.flags.writeable and a.flags.c_contiguous
    a[:] = 0
    assert llama.lookup([1, 2]).any()


def test_no_queries_is_an_empty_array(llama):
    hidden = llama.info()["embedding"]["shape"][1]
    assert llama.lookup([]).shape == (0, hidden)
    assert llama.resolve([]) == []
