"""The console script: the command line in-process, its exit codes."""

import os
import subprocess
import sys
from pathlib import Path

from conftest import cli, fixture


def script():
    """The `embscope` script pip installed beside this Python."""
    name = "embscope.exe" if os.name == "nt" else "embscope"
    return str(Path(sys.executable).parent / name)


def test_exit_codes():
    ok = subprocess.run([script(), "info", fixture("gpt2-tied")], capture_output=True, text=True)
    assert ok.returncode == 0 and "wte.weight" in ok.stdout
    assert cli("check", "--fail-on", "warn", fixture("defects/zero-rows")).returncode == 1
    missing = cli("info", "no/such/dir")
    assert missing.returncode == 2
    assert missing.stderr.startswith("embscope: ") and missing.stderr.count("\n") == 1
    assert cli("lookup", fixture("gpt2-tied"), "--fulll").returncode == 2
    assert cli("--version").returncode == 0


def test_usage_names_the_command():
    run = cli("info")
    assert run.returncode == 2
    assert "embscope" in run.stderr and sys.executable not in run.stderr


def test_main_is_the_command_line():
    import embscope

    assert embscope.main(["embscope", "--quiet", "size", fixture("gpt2-tied")]) == 0
    assert embscope.main(["embscope", "info", "no/such/dir"]) == 2
