"""Bad input raises embscope.Error with the command line's one-line message."""

import pytest

import embscope
from conftest import cli_error, cli_json, fixture


@pytest.mark.parametrize(
    "model",
    [
        "no/such/dir",
        "broken/truncated.safetensors",
        "broken/bad-json.safetensors",
        "broken/bad-header-len.safetensors",
        "broken/overlap.safetensors",
        "broken/missing-shard",
        "gguf/broken",
    ],
)
def test_a_model_that_cannot_be_opened(model):
    with pytest.raises(embscope.Error) as e:
        embscope.open(fixture(model))
    assert str(e.value) == cli_error("info", fixture(model))
    assert "\n" not in str(e.value)


def test_a_tensor_name_given_twice_is_refused_by_every_call_but_check():
    model = fixture("broken/duplicate-tensor-name.safetensors")
    m = embscope.open(model)
    for call, command in [
        (m.info, "info"),
        (m.tensors, "tensors"),
        (m.size, "size"),
        (lambda: m.lookup([0]), "lookup"),
        (lambda: m.neighbors(0), "neighbors"),
        (m.undertrained, "undertrained"),
        (m.rows, "rows"),
        (lambda: embscope.diff(m, m), "diff"),
    ]:
        with pytest.raises(embscope.Error) as e:
            call()
        assert str(e.value) == cli_error("info", model), command
    # check audits it, as the command line's does.
    assert m.check() == cli_json("check", model)


def test_queries_that_cannot_be_answered(llama):
    model = fixture("llama-sharded")
    cases = [
        (lambda: llama.neighbors("Parisx"), ["neighbors", model, "Parisx"]),
        (lambda: llama.neighbors("#99999"), ["neighbors", model, "#99999"]),
        (lambda: llama.neighbors("king -"), ["neighbors", model, "king -"]),
        (lambda: llama.lookup([99999]), ["lookup", model, "--id", "99999"]),
        (lambda: llama.lookup(text=""), ["lookup", model, "--text", ""]),
    ]
    for call, args in cases:
        with pytest.raises(embscope.Error) as e:
            call()
        assert str(e.value) == cli_error(*args)


def test_arguments_out_of_their_range(llama):
    for call, message in [
        (lambda: llama.lookup([-1]), "ids are non-negative integers, not `-1`"),
        (lambda: llama.lookup(["king - man"]), "`king - man` is an expression of 2 terms, not one token"),
        (lambda: llama.neighbors("Paris", matrix="both"), 'matrix must be "embed" or "head", not "both"'),
        (lambda: llama.neighbors("Paris", metric="l2"), 'metric must be "cosine" or "dot", not "l2"'),
        (lambda: llama.neighbors("Paris", filter="nouns"), 'filter must be "no-special", "no-padding" or "letters", not "nouns"'),
        (lambda: llama.neighbors(), "no query: give a query or text="),
        (lambda: llama.neighbors("Paris", text="Paris"), "give a query or text=, not both"),
        (lambda: llama.neighbors("Paris", k=0), "-k must be at least 1"),
        (lambda: llama.undertrained(reference="3-1"), "reference: range `3-1` runs backwards"),
    ]:
        with pytest.raises(embscope.Error) as e:
            call()
        assert str(e.value) == message
    with pytest.raises(TypeError):
        llama.lookup([1.5])


def test_without_a_tokenizer_words_fail_and_ids_work():
    m = embscope.open(fixture("dtypes/bf16.safetensors"))
    assert m.lookup([0]).shape[0] == 1
    with pytest.raises(embscope.Error, match="tokenizer"):
        m.lookup(["hello"])


def test_notes_are_warnings():
    with pytest.warns(embscope.Note, match="revision applies to Hub ids only"):
        embscope.open(fixture("gpt2-tied"), revision="v1")


def test_the_error_is_an_exception():
    assert issubclass(embscope.Error, Exception)
    assert embscope.Error.__module__ == "embscope"
