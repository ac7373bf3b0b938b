"""neighbors: the results of the command line's --json, one query or many."""

import threading

import pytest

import embscope
from conftest import cli_json, fixture


def cli_results(model, *args):
    return [a["results"] for a in cli_json("neighbors", fixture(model), *args)["queries"]]


@pytest.mark.parametrize("model", ["llama-sharded", "gpt2-tied", "qwen-f16-tied", "gguf/llama-q8_0-tied.gguf"])
def test_results_equal_the_cli(model):
    m = embscope.open(fixture(model))
    queries = ["Paris", "king - man + woman", "#5"]
    assert m.neighbors(queries, k=3) == cli_results(model, *queries, "-k", "3")
    assert m.neighbors("Paris", k=3) == cli_results(model, "Paris", "-k", "3")[0]


def test_every_option_equals_the_cli(llama):
    model = "llama-sharded"
    assert llama.neighbors(291, k=5, metric="dot") == cli_results(model, "#291", "-k", "5", "--metric", "dot")[0]
    assert llama.neighbors("Paris", include_query=True) == cli_results(model, "Paris", "--include-query")[0]
    assert llama.neighbors("Paris", matrix="head") == cli_results(model, "Paris", "--matrix", "head")[0]
    assert llama.neighbors("Paris", filter=["letters", "no-special"]) == cli_results(
        model, "Paris", "--filter", "letters", "--filter", "no-special"
    )[0]
    assert llama.neighbors(text="the king of France") == cli_results(model, "--text", "the king of France")[0]


def test_results_are_dicts_best_first(llama):
    results = llama.neighbors("Paris", k=3)
    assert [r["rank"] for r in results] == [1, 2, 3]
    assert results[0] == {"rank": 1, "id": 291, "token": " France", "score": results[0]["score"]}
    assert results[0]["score"] >= results[1]["score"]


def test_scans_leave_other_threads_running(llama):
    # The scan releases the GIL: threads calling at once all finish.
    out = [None] * 4
    def work(i):
        out[i] = llama.neighbors(["Paris", "#7"], k=2)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(o == out[0] for o in out)


def test_k_past_the_rows_is_a_note(llama):
    with pytest.warns(embscope.Note, match="candidate rows"):
        results = llama.neighbors("#5", k=10**6)
    assert len(results) == llama.info()["embedding"]["shape"][0] - 1
