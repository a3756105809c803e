"""pau type-checks: mypy with the repository's configuration (``[tool.mypy]`` in
pyproject.toml) reports no error.

mypy keeps its incremental cache in ``.mypy_cache`` at the repository root (git
ignores it): the first run checks everything (a few seconds), later ones only what
changed.
"""

from __future__ import annotations

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_mypy_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    api = pytest.importorskip("mypy.api", reason="mypy is not installed (pip install -e '.[test]')")
    # From the root: [tool.mypy] files = ["src/pau"] is relative to the working directory.
    monkeypatch.chdir(ROOT)
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                      "--cache-dir", str(ROOT / ".mypy_cache")])
    assert status == 0, f"mypy failed (exit status {status}):\n{stdout}{stderr}"
