"""A broken side file blocks only what it feeds, as on the command line:
rows by id, info and the scores go on without it and say so in a Note;
a word query, which the tokenizer feeds, raises; check reports it."""

import warnings

import pytest

import embscope
from conftest import cli, cli_error, cli_json, fixture

BROKEN = fixture("broken/side-files")


def notes(call):
    """What `call` returns, and the Notes it warns, in order."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", embscope.Note)
        value = call()
    return value, [str(w.message) for w in caught if w.category is embscope.Note]


def cli_notes(*args):
    """The `note: ` lines the command line prints on stderr."""
    run = cli(*args)
    assert run.returncode == 0, run.stderr
    return [line[len("note: ") :] for line in run.stderr.splitlines() if line.startswith("note: ")]


def test_rows_by_id_go_on_with_the_notes_the_command_line_prints():
    m, opened = notes(lambda: embscope.open(BROKEN))
    results, searched = notes(lambda: m.neighbors(5, k=4))
    assert opened + searched == cli_notes("neighbors", BROKEN, "#5", "-k", "4")
    assert results == cli_json("neighbors", BROKEN, "#5", "-k", "4")["queries"][0]["results"]
    assert all(r["token"] is None for r in results)
    info, said = notes(m.info)
    assert info == cli_json("info", BROKEN)
    assert any("tokenizer.json` is unreadable" in n for n in said), said
    report, said = notes(lambda: m.undertrained(top=3))
    assert report == cli_json("undertrained", BROKEN, "--top", "3")
    assert any("tokenizer.json` is unreadable" in n for n in said), said
    assert m.rows()["token"][0] is None


def test_a_word_query_raises_on_the_broken_tokenizer():
    m, _ = notes(lambda: embscope.open(BROKEN))
    with pytest.raises(embscope.Error) as e:
        m.neighbors("Paris")
    assert str(e.value) == cli_error("--quiet", "neighbors", BROKEN, "Paris")
    with pytest.raises(embscope.Error):
        m.lookup(["Paris"])


def test_check_reports_each_broken_file():
    m, _ = notes(lambda: embscope.open(BROKEN))
    report, _ = notes(m.check)
    assert report == cli_json("check", BROKEN)
    codes = [f["code"] for f in report["findings"]]
    assert "unreadable-file" in codes
