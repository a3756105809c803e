"""Where the tests find real sample data.

``shared(*parts)`` gives the path ``<root>/<parts...>`` under the first data root that
has it, and skips the calling test (with a message naming every place it looked) when
none has it. The roots are searched in this order:

* when the environment variable ``PAU_TEST_DATA`` is set (and not empty):
  1. ``$PAU_TEST_DATA``
  2. ``tests/data`` (``LOCAL``, the curated subset kept in the repository)

  and ``../shared/data`` is **not** searched. So ``PAU_TEST_DATA=/nonexistent`` (or
  ``PAU_TEST_DATA=tests/data``) runs the tests on ``tests/data`` alone, as in a fresh
  clone without the shared folder.
* otherwise:
  1. ``../shared/data`` relative to the repository (``ROOT``: the full samples, present on
     the team's machines and in CI)
  2. ``tests/data``

Paths keep their relative layout in every root (``kineto/hta-trace_filter``,
``mlperf/training_v4.0/...``), so a test names a sample once and it is found wherever it
is. ``tests/data/README.md`` lists what the curated subset holds and what it leaves out;
a test whose sample is only in ``../shared/data`` skips cleanly without it.
"""

from __future__ import annotations

import os
import pathlib
from typing import List, Optional

import pytest

#: The full shared samples: ``../shared/data`` beside the repository checkout.
ROOT = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
#: The curated subset committed with the tests.
LOCAL = pathlib.Path(__file__).resolve().parent / "data"
#: The environment variable that names a data folder to search first (and that turns off
#: the search of ``ROOT``).
ENV = "PAU_TEST_DATA"


def roots() -> List[pathlib.Path]:
    """The data roots to search, in order (see the module docstring)."""
    env = os.environ.get(ENV, "")
    if env:
        first = pathlib.Path(env).expanduser().resolve()
        return [first] if first == LOCAL else [first, LOCAL]
    return [ROOT, LOCAL]


def locate(*parts: str) -> Optional[pathlib.Path]:
    """The first existing ``<root>/<parts...>``, or ``None`` (never skips)."""
    for root in roots():
        path = root.joinpath(*parts)
        if path.exists():
            return path
    return None


def shared(*parts: str) -> pathlib.Path:
    """The first existing ``<root>/<parts...>``; skip the test when no root has it."""
    path = locate(*parts)
    if path is None:
        rel = "/".join(parts)
        looked = ", ".join(str(r.joinpath(*parts)) for r in roots())
        how = (f"{ENV} is set, so ../shared/data is not searched" if os.environ.get(ENV)
               else f"set {ENV}=DIR to search another folder first")
        pytest.skip(f"test data {rel!r} not found; looked in: {looked} ({how})")
    return path
