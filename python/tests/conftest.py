"""Shared helpers: the repository's fixtures and the command line, run as
the installed console script runs it (``python -m embscope``)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def fixture(name):
    """The path of a fixture, as a string (what MODEL takes)."""
    return str(FIXTURES / name)


def cli(*args):
    """Runs the command line in a process of its own; the finished process."""
    return subprocess.run(
        [sys.executable, "-m", "embscope", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def cli_json(*args):
    """The document the command line prints with --json."""
    run = cli("--json", *args)
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout)


def cli_error(*args):
    """The one-line error the command line prints, without `embscope: `."""
    run = cli(*args)
    assert run.returncode == 2, (run.returncode, run.stdout)
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("embscope: "), run.stderr
    return lines[0][len("embscope: ") :]


@pytest.fixture(scope="session")
def llama():
    import embscope

    return embscope.open(fixture("llama-sharded"))
