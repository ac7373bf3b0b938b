"""info, tensors, size, check, undertrained and rows: the --json documents."""

import math

import numpy as np
import pytest

import embscope
from conftest import cli_json, fixture


@pytest.mark.parametrize("model", ["llama-sharded", "bert", "gguf/llama-q8_0-tied.gguf", "tied-head-stored"])
def test_header_reports_equal_the_cli(model):
    m = embscope.open(fixture(model))
    assert m.info() == cli_json("info", fixture(model))
    assert m.tensors() == cli_json("tensors", fixture(model))
    assert m.size() == cli_json("size", fixture(model))


def test_tensors_filter(llama):
    assert llama.tensors("*embed*") == cli_json("tensors", fixture("llama-sharded"), "--filter", "*embed*")


@pytest.mark.parametrize("model", ["llama-sharded", "defects/zero-rows", "defects/non-finite-values"])
def test_check_equals_the_cli(model):
    assert embscope.open(fixture(model)).check() == cli_json("check", fixture(model))


def test_check_takes_a_chat_template_and_data_as_the_cli_does():
    base = fixture("chat/base")
    template = fixture("chat/llama3.jinja")
    data = [fixture("chat/data.jsonl"), fixture("chat/data.txt")]
    m = embscope.open(base)
    report = m.check(chat_template=template, data=data)
    assert report == cli_json(
        "check", base, "--chat-template", template, "--data", data[0], "--data", data[1]
    )
    codes = {f["code"] for f in report["findings"]}
    assert {"template-uses-untrained", "data-uses-untrained"} <= codes
    with pytest.raises(embscope.Error, match="no/such.jsonl"):
        m.check(data=["/no/such.jsonl"])


def test_undertrained_equals_the_cli():
    model = fixture("untrained")
    m = embscope.open(model)
    assert m.undertrained() == cli_json("undertrained", model)
    assert m.undertrained(top=5, matrix="head", reference="0-3, 9") == cli_json(
        "undertrained", model, "--top", "5", "--matrix", "head", "--reference", "0-3, 9"
    )
    assert m.undertrained(reference=[0, 1, 2, 3, 9], reachability=False) == cli_json(
        "undertrained", model, "--reference", "0-3,9", "--no-reachable"
    )
    assert m.undertrained(include_reference=True) == cli_json("undertrained", model, "--include-reference")


def test_rows_are_the_columns_of_the_cli():
    model = fixture("untrained")
    doc = cli_json("rows", model, "--format", "json")
    cols = embscope.open(model).rows()
    names = ["id", "token", "kind", "embed_norm", "head_norm", "head_cosine", "embed_distance", "score", "strong", "reference"]
    assert list(cols) == names
    n = len(doc["rows"])
    assert all(isinstance(c, np.ndarray) and c.shape == (n,) for c in cols.values())
    assert cols["id"].dtype == np.uint32 and cols["score"].dtype == np.float64
    assert cols["embed_norm"].dtype == np.float32 and cols["strong"].dtype == np.bool_
    for name in names:
        for i, row in enumerate(doc["rows"]):
            got, want = cols[name][i], row[name]
            if isinstance(got, (np.floating, float)):
                if want is None:
                    assert math.isnan(got), (name, i)
                else:
                    assert got == np.float32(want) or got == want, (name, i)
            else:
                assert got == want, (name, i)


def test_rows_of_a_tied_model_have_no_head_norms():
    cols = embscope.open(fixture("gpt2-tied")).rows()
    assert np.isnan(cols["head_norm"]).all()
    assert not np.isnan(cols["embed_norm"]).any()
