"""Start-up of the command line: ``pau --help`` and ``pau --version`` in a fresh process,
side by side with a bare ``python -c pass`` and with importing the whole engine
(``import pau.core``), which is what the command line paid before it parsed first.

Each process is timed around ``subprocess.run`` (wall time, the interpreter's start
included). The answer is asserted: ``--version`` prints ``pau VERSION`` and ``--help``
names every subcommand.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import pau

CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "pau --version": [sys.executable, "-m", "pau._args", "--version"],
    "pau --help": [sys.executable, "-m", "pau._args", "--help"],
    "import pau.core": [sys.executable, "-c", "import pau.core"],
}


@pytest.mark.parametrize("name", list(CASES))
def test_start_up(benchmark, name):
    res = benchmark(subprocess.run, CASES[name], capture_output=True, text=True, check=True)
    if name == "pau --version":
        assert res.stdout.strip() == f"pau {pau.__version__}"
    elif name == "pau --help":
        assert all(c in res.stdout for c in ("report", "convert", "compare"))
