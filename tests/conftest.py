"""Shared fixtures for pau's tests.

Helpers that build Arrow tables from plain rows live here as fixtures returning
functions, so tests do not import conftest.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import pau.engine._jit

# The one stderr line of a first compile would land in whichever test compiles first
# (and break its check of stderr); tests/test_lifecycle_kernels.py checks the line in
# processes of its own.
pau.engine._jit.silence()


def pytest_configure(config):
    # When a Hypothesis test fails, its failure report walks loaded modules and touches
    # mypy_extensions.TypedDict, whose DeprecationWarning (an error under
    # filterwarnings=error) turns the report into an INTERNALERROR hiding the failure.
    config.addinivalue_line(
        "filterwarnings", "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning")


def _events(rows, *, stream=True, dictionary=True) -> pa.Table:
    """A pau events table from ``(rank, start_ns, end_ns, kind[, stream])`` tuples."""
    rows = [tuple(r) for r in rows]
    kind = pa.array([r[3] for r in rows], pa.string())
    cols = {
        "rank": pa.array([r[0] for r in rows], pa.int32()),
        "start_ns": pa.array([r[1] for r in rows], pa.int64()),
        "end_ns": pa.array([r[2] for r in rows], pa.int64()),
        "kind": kind.dictionary_encode() if dictionary else kind,
    }
    if stream:
        cols["stream"] = pa.array([r[4] if len(r) > 4 else 0 for r in rows], pa.int32())
    return pa.table(cols)


@pytest.fixture
def make_events():
    """``make_events(rows, stream=True, dictionary=True) -> pa.Table``."""
    return _events


@pytest.fixture
def two_rank_rows():
    """The hand-checked example of test_core (times in ns).

    rank 0: compute [0, 60), communication [40, 100), compute [120, 150)
            -> span [0, 150): compute 60+30=90, exposed communication 100-60=40,
               idle 120-100=20; |comm ∩ compute| = 60-40 = 20 of |comm| = 60.
    rank 1: memcpy [10, 30) on stream 1, compute [20, 50) on stream 0, sync [50, 50)
            -> span [10, 50): compute 30, memcpy 10 (10..20), idle 0; no communication.
    """
    return [
        (0, 0, 60, "compute", 0),
        (0, 40, 100, "communication", 1),
        (0, 120, 150, "compute", 0),
        (1, 10, 30, "memcpy", 1),
        (1, 20, 50, "compute", 0),
        (1, 50, 50, "sync", 2),
    ]
