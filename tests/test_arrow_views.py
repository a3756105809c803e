"""The engine's own Arrow <-> numpy conversions (``pau.engine._input.as_numpy``,
``pau.engine.vocab.from_numpy`` and ``strings``) give what pyarrow's give, and keep a fresh
process's ``classify_dataset`` from importing pandas (pyarrow's conversions import it on
their first use)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pau.core
import pau.engine.io
from pau.engine._input import as_numpy
from pau.engine.vocab import NUMPY_OF, from_numpy, strings

TYPES = list(NUMPY_OF)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(TYPES), st.lists(st.integers(0, 100), max_size=40), st.integers(0, 5), st.integers(0, 40),
       st.integers(1, 3), st.booleans())
def test_as_numpy_is_to_numpy(arrow_type, ints, offset, length, chunks, with_null):
    values = [None if with_null and i == 0 else v for i, v in enumerate(ints)]
    arr = pa.array(values, arrow_type).slice(offset, length)
    expected = arr.to_numpy(zero_copy_only=False)
    for source in (arr, pa.chunked_array([arr] * chunks, arrow_type)):
        got = as_numpy(source)
        want = expected if isinstance(source, pa.Array) else np.concatenate([expected] * chunks)
        assert got.dtype == want.dtype
        assert np.array_equal(got, want, equal_nan=True)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(TYPES), st.lists(st.integers(0, 100), max_size=40), st.integers(1, 3))
def test_from_numpy_is_pa_array(arrow_type, ints, step):
    values = np.asarray(ints, NUMPY_OF[arrow_type])[::step]
    got = from_numpy(values, arrow_type)
    got.validate(full=True)
    assert got.equals(pa.array(values, arrow_type))


def test_from_numpy_converts_nothing():
    with pytest.raises(TypeError, match="int32, got int64"):
        from_numpy(np.arange(3, dtype=np.int64), pa.int32())


@given(st.lists(st.text(max_size=8), max_size=12))
def test_strings_is_pa_array(values):
    got = strings(values)
    got.validate(full=True)
    assert got.equals(pa.array(values, pa.string()))


def test_strings_with_none_goes_through_pyarrow():
    assert strings(["a", None]).equals(pa.array(["a", None], pa.string()))


def test_fresh_classify_dataset_does_not_import_pandas(tmp_path):
    rows = 4_000
    rng = np.random.default_rng(3)
    rank = np.repeat(np.arange(4, dtype=np.int32), rows // 4)
    start = np.concatenate([np.sort(rng.integers(0, 10**6, rows // 4)) for _ in range(4)])
    kinds = pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 3, rows).astype(np.int8)),
                                           pa.array(["compute", "communication", "memcpy"]))
    table = pa.table({"rank": rank, "start_ns": start, "end_ns": start + rng.integers(0, 500, rows),
                      "kind": kinds})
    pau.engine.io.write_dataset(table, tmp_path / "archive")
    code = ("import sys, pau.core\n"
            "t = pau.core.classify_dataset(sys.argv[1], progress=False)\n"
            "print('pandas' in sys.modules, t['duration_ns'].to_pylist())")
    res = subprocess.run([sys.executable, "-c", code, str(tmp_path / "archive")], capture_output=True, text=True,
                         env=dict(os.environ), check=True, timeout=300)
    imported, durations = res.stdout.split(" ", 1)
    assert imported == "False", "pau.core.classify_dataset imported pandas in a fresh process"
    assert durations.strip() == str(pau.core.classify(table)["duration_ns"].to_pylist())
