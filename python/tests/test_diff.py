"""embscope.diff: the --json document of `embscope diff`."""

import pytest

import embscope
from conftest import cli, cli_error, cli_json, fixture

BASE = fixture("diff/base")


@pytest.mark.parametrize("tuned", ["diff/tuned", "diff/tuned-q8_0.gguf", "diff/tuned-tied", "diff/base"])
def test_diff_equals_the_cli(tuned):
    got = embscope.diff(BASE, fixture(tuned))
    assert got == cli_json("diff", BASE, fixture(tuned))
    assert got["same"] == (cli("diff", BASE, fixture(tuned)).returncode == 0)


def test_options_and_opened_models():
    base, tuned = embscope.open(BASE), embscope.open(fixture("diff/tuned"))
    assert embscope.diff(base, tuned, matrix="head", top=3, by_id=True) == cli_json(
        "diff", BASE, fixture("diff/tuned"), "--matrix", "head", "--top", "3", "--by-id"
    )
    assert embscope.diff(base, fixture("diff/tuned"), matrix="both") == embscope.diff(BASE, tuned)


def test_models_that_cannot_be_compared():
    with pytest.raises(embscope.Error) as e:
        embscope.diff(BASE, fixture("bert"))
    assert str(e.value) == cli_error("diff", BASE, fixture("bert"))
    with pytest.raises(embscope.Error, match='matrix must be "embed", "head" or "both", not "all"'):
        embscope.diff(BASE, BASE, matrix="all")
