"""The Python↔Numba boundary stays narrow (issue 39): no kernel takes more than 8
positional parameters or returns a tuple of more than 3.

Which functions are the boundary: every ``@kernel`` of :mod:`pau.engine._kernels`,
:mod:`pau.engine._econ_kernels` and :mod:`pau.fleet._cells` (``pau.engine._jit.kernel``:
compiled to be called from Python), whether or not code outside the modules calls it
today. The ``@helper``
functions are inlined into the kernels (``inline="always"``) and called only by them:
inside the boundary, free to pass what they like; they are private (a leading
underscore), the kernels public, so a name says which side it is on. Counting every
kernel rather than the ones called from outside today keeps the rule from depending
on where a kernel happens to be called from.

Arrays cross in named tuples (``_kernels.Pieces``, ``PassOut``, ...): a named tuple is one
parameter, and its fields are read by name on both sides, so a returned named tuple
counts as one value; an anonymous tuple (unpacked by position) counts its elements,
at any depth of the return type. The return types are Numba's own, read from the
compiled signatures after a typical call of each kernel (the calls below go through
the public paths that run them).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from lifecycle_cases import table
from pau.engine import _econ_kernels, _jit, _kernels
from pau.engine import _lifecycle as lifecycle
from pau.figures import economics
from pau.fleet import _cells

MAX_POSITIONAL = 8
MAX_TUPLE = 3
MODULES = {_kernels.__name__, _econ_kernels.__name__, _cells.__name__}


def _registered() -> list:
    """Every kernel and helper of the modules, as pau.engine._jit registered them."""
    return [lazy for lazy in _jit._LAZY if lazy.fn.__module__ in MODULES]


def _kernels_only() -> list:
    return [lazy for lazy in _registered() if not lazy.extra]


def _positional(fn) -> int:
    params = inspect.signature(fn).parameters.values()
    assert all(p.kind is not p.VAR_POSITIONAL for p in params), f"{fn.__name__} takes *args"
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def test_there_are_kernels_and_helpers():
    names = {lazy.fn.__name__ for lazy in _kernels_only()}
    assert {"attribute_pass", "steps_pass", "expand_ordered", "rank_order", "checkpoint_runs", "add_cells"} <= names
    assert any(lazy.extra for lazy in _registered())


def test_kernels_are_public_and_helpers_private():
    """The name says which side of the boundary a function is on."""
    for lazy in _registered():
        name = lazy.fn.__name__
        if lazy.extra:
            assert lazy.extra == {"inline": "always"} and name.startswith("_"), name
        else:
            assert not name.startswith("_"), name


@pytest.mark.parametrize("lazy", _kernels_only(), ids=lambda lazy: lazy.fn.__name__)
def test_at_most_8_positional_parameters(lazy):
    assert _positional(lazy.fn) <= MAX_POSITIONAL, inspect.signature(lazy.fn)


def test_the_rule_counts_parameters():
    """The counter against functions of known width (so the gate can fail)."""
    def wide(a, b, c, d, e, f, g, h, i):
        return a

    def narrow(a, b, *, c=0):
        return a

    assert _positional(wide) == 9 > MAX_POSITIONAL
    assert _positional(narrow) == 2


def _typical_calls() -> None:
    """Each kernel once, through the paths that run it."""
    rows = [dict(record="attempt", attempt=1, rank=0, start=0, end=100, kind="completed"),
            dict(record="attempt", attempt=1, rank=1, start=0, end=100, kind="completed"),
            dict(record="step", attempt=1, rank=1, step=1, start=0, end=10, tokens=3),
            dict(record="step", attempt=1, rank=0, step=1, start=0, end=10, tokens=3),
            dict(record="step", attempt=1, rank=0, step=2, start=10, end=20, tokens=3)]
    # steps of rank 1 before rank 0: rank_order; attribute_pass; the step labels: steps_pass
    att = lifecycle.attribute_rows(table(rows))
    assert att.preserved_steps == 2 and att.preserved_tokens == 9
    assert att.step_num.tolist() == [1, 2, 1]
    # steps of rank -1 over two threads: the visit list (expand_ordered)
    every = [dict(r, rank=-1) if r["record"] == "step" and r["rank"] == 0 else r for r in rows[:2] + rows[3:]]
    two = lifecycle.attribute_rows(table(every), threads=2)
    assert two.preserved_steps == 2 and two.preserved_tokens == 6
    # the checkpoint Monte Carlo
    out = economics.checkpoint_interval(3600.0, 60.0, 30.0, simulate=2, seed=0)
    assert 0 < out["simulated_goodput_daly"] <= 1
    # a fleet rollup's cells (the kernel as the rollup calls it: dictionary indices, int32)
    i32, i64 = np.zeros(1, np.int32), np.zeros(1, np.int64)
    sums = np.zeros((1, 3), np.int64)
    got = _cells.add_cells(_cells.Cells(i32, i32, i64, np.array([5], np.int64)),
                           _cells.Lookup(i64, np.ones(1, np.int8), i64), _cells.Hours(0, i64), sums, 3)
    assert tuple(got) == (0, 0, 0) and sums[0, 0] == 5


def _anonymous_tuples_too_long(t, where: str) -> list[str]:
    """Anonymous tuples of more than MAX_TUPLE in a Numba type, at any depth."""
    from numba.core import types

    out = []
    if isinstance(t, types.BaseNamedTuple):
        inner = t.types
    elif isinstance(t, types.BaseTuple):
        if len(t.types) > MAX_TUPLE:
            out.append(f"{where}: a tuple of {len(t.types)} ({t})")
        inner = t.types
    else:
        return out
    for k, c in enumerate(inner):
        out += _anonymous_tuples_too_long(c, f"{where}[{k}]")
    return out


def test_return_types_hold_no_tuple_of_more_than_3():
    _typical_calls()
    problems = []
    for lazy in _kernels_only():
        sigs = lazy.dispatcher.nopython_signatures if lazy.dispatcher is not None else []
        assert sigs, f"{lazy.fn.__name__}: no compiled signature; give it a call in _typical_calls"
        for sig in sigs:
            problems += _anonymous_tuples_too_long(sig.return_type, lazy.fn.__name__)
    assert not problems, "\n".join(problems)


def test_the_rule_counts_tuples():
    """The checker against Numba types of known shape (so the gate can fail)."""
    from numba.core import types

    i = types.int64
    assert _anonymous_tuples_too_long(types.UniTuple(i, 4), "f") == [f"f: a tuple of 4 ({types.UniTuple(i, 4)})"]
    assert _anonymous_tuples_too_long(types.Tuple((i, types.UniTuple(i, 5))), "f") != []
    named = types.NamedUniTuple(i, 4, _kernels.Tally)
    assert _anonymous_tuples_too_long(named, "f") == []  # fields read by name
    assert _anonymous_tuples_too_long(types.Tuple((named, i)), "f") == []
    assert _anonymous_tuples_too_long(i, "f") == []
