"""Where the tests find ../shared/data (real samples, never copied into the repo)."""

from __future__ import annotations

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


def shared(*parts: str) -> pathlib.Path:
    """The path under shared/data, or skip the test with a message when it is absent."""
    path = ROOT.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data {'/'.join(parts)!r} not found at {path}")
    return path
