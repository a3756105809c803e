"""Typed results (issue 39, item 4): no public function or method returns a loose type.

Every function in the ``__all__`` of a public module (no leading underscore in its
dotted name), and every public method and property of a class there, is looked at
through ``typing.get_type_hints``. Its return type is loose when it is ``Any``, a bare
``dict``, ``dict[..., Any]``, a bare ``tuple`` or a tuple of more than three (or a union
holding one of them): such a result says nothing of its keys or parts. Give it a
TypedDict, a dataclass or a NamedTuple (``pau.engine.types`` holds the shared ones).

``LOOSE`` lists the ones left when the gate came in: debt, which may only shrink (a new
loose return fails, and so does a listed one that is typed now: take it off).
``BY_DESIGN`` lists the ones whose shape another library defines."""

from __future__ import annotations

import builtins
import importlib
import inspect
import pkgutil
import types
import typing
from typing import Any

import pytest

import pau

#: Loose returns today, each a debt to pay: none left (the fleet's were the last).
LOOSE: set[str] = set()

#: Returns whose shape is another library's: ml-goodput-measurement's
#: ``get_job_goodput_interval`` returns a 5-tuple, which pau's mirror keeps.
BY_DESIGN = {
    "pau.compat.mlg_library.get_job_goodput_interval",
}


class _Unknown(type):
    """A class standing for a name only type checkers import (its attributes, as
    ``pandas.DataFrame``, and its subscripts too)."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Unknown(f"{cls.__name__}.{name}", (), {})

    def __getitem__(cls, args: Any) -> Any:   # Iterator[...] of a TYPE_CHECKING import
        return cls


class _Names(dict):  # type: ignore[type-arg]
    """A function's globals in which a name imported only for type checkers (``if
    TYPE_CHECKING``) resolves to a class of that name: such a name is never ``Any`` or
    a dict."""

    def __missing__(self, key: str) -> Any:
        if hasattr(builtins, key):
            return getattr(builtins, key)
        if key.startswith("__"):   # pytest looks up __tracebackhide__ in frames' locals
            raise KeyError(key)
        return _Unknown(key, (), {})


def loose(h: Any) -> str | None:
    """Why a return type is loose, or None."""
    if h is Any:
        return "Any"
    if h is dict or h is typing.Dict:
        return "a bare dict"
    if h is tuple or h is typing.Tuple:
        return "a bare tuple"
    origin, args = typing.get_origin(h), typing.get_args(h)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        return next((w for w in map(loose, args) if w), None)
    if origin is dict and len(args) == 2 and args[1] is Any:
        return "dict[..., Any]"
    if origin is tuple and len(args) > 3 and args[-1] is not Ellipsis:
        return f"a tuple of {len(args)}"
    return None


def public_modules() -> list[str]:
    names = ["pau"]
    for m in pkgutil.walk_packages(pau.__path__, "pau."):
        if not any(part.startswith("_") for part in m.name.split(".")[1:]):
            names.append(m.name)
    return sorted(names)


def _callables(obj: Any) -> list[tuple[str, Any]]:
    """The function, or a class's public methods and properties, with dotted names."""
    if inspect.isfunction(obj):
        return [(f"{obj.__module__}.{obj.__qualname__}", obj)]
    if not (inspect.isclass(obj) and obj.__module__.startswith("pau")):
        return []
    out = []
    for k, v in vars(obj).items():
        f = v.fget if isinstance(v, property) else v.__func__ if isinstance(v, (classmethod, staticmethod)) else v
        if not k.startswith("_") and inspect.isfunction(f):
            out.append((f"{obj.__module__}.{obj.__qualname__}.{k}", f))
    return out


def returns() -> dict[str, Any]:
    """Every public function's and method's return type, by dotted name."""
    out: dict[str, Any] = {}
    for name in public_modules():
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:   # an optional extra not installed
            if exc.name is not None and exc.name.split(".")[0] == "pau":
                raise
            continue
        for attr in getattr(mod, "__all__", ()):
            for q, f in _callables(getattr(mod, attr, None)):   # a subpackage may list its modules
                if q not in out:
                    out[q] = typing.get_type_hints(f, localns=_Names(f.__globals__)).get("return")
    return out


@pytest.fixture(scope="module")
def found() -> dict[str, str]:
    return {q: why for q, h in returns().items() if (why := loose(h))}


def test_the_check_sees_loose_returns():
    assert loose(Any) == "Any" and loose(dict) == "a bare dict" and loose(typing.Optional[dict[str, Any]])
    assert loose(tuple[int, int, int, int]) == "a tuple of 4" and loose(tuple) == "a bare tuple"
    assert loose(dict[str, int]) is None and loose(tuple[int, ...]) is None and loose(tuple[int, int, int]) is None
    assert loose(pau.Run) is None and loose(typing.Optional[pau.engine.types.RunSummary]) is None
    assert "pau.run.Run.summary" in returns() and "pau.readers.mllog.read_mllog" in returns()


def test_no_public_function_returns_a_loose_type_but_the_listed_ones(found):
    new = sorted(f"{q}: {why}" for q, why in found.items() if q not in LOOSE | BY_DESIGN)
    assert not new, f"public functions returning a loose type (give them a TypedDict or a dataclass): {new}"
    paid = sorted((LOOSE | BY_DESIGN) - set(found))
    assert not paid, f"typed now: take them off LOOSE / BY_DESIGN in tests/test_typed_returns.py: {paid}"


# ---------------------------------------------------------------------------
# the types say what the functions return: each result checked against its type


def conforms(v: Any, tp: Any) -> bool:
    """Whether ``v`` is of type ``tp`` (a TypedDict checked key by key: its required keys
    there, no key it does not name; a float is a float, not an int)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return True
    if tp is type(None):
        return v is None
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        return any(conforms(v, a) for a in args)
    if hasattr(tp, "__required_keys__"):   # a TypedDict
        hints = typing.get_type_hints(tp)
        return (isinstance(v, dict) and tp.__required_keys__ <= v.keys() <= set(hints)
                and all(conforms(v[k], hints[k]) for k in v))
    if origin is list:
        return isinstance(v, list) and all(conforms(x, args[0]) for x in v)
    if origin is tuple:
        return isinstance(v, tuple) and len(v) == len(args) and all(map(conforms, v, args))
    if origin is dict:
        return isinstance(v, dict) and all(conforms(k, args[0]) and conforms(x, args[1]) for k, x in v.items())
    if tp in (int, float):
        return type(v) is tp
    assert origin is None and isinstance(tp, type), f"conforms: no rule for {tp!r}"
    return isinstance(v, tp)


def returned(f: Any) -> Any:
    return typing.get_type_hints(f)["return"]


def test_conforms_checks_typed_dicts_key_by_key():
    class TD(typing.TypedDict):
        a: int
        b: typing.Optional[float]

    assert conforms({"a": 1, "b": None}, TD) and conforms({"a": 1, "b": 2.5}, TD)
    assert not conforms({"a": 1}, TD) and not conforms({"a": 1, "b": 2}, TD)
    assert not conforms({"a": 1, "b": None, "c": 0}, TD) and not conforms({"a": True, "b": None}, TD)
    assert conforms([("x", 1)], typing.List[typing.Tuple[str, int]]) and not conforms([("x", 1.0)], typing.List[
        typing.Tuple[str, int]])


COST_MODEL = {"accelerator": {"H100": {"contract_rate_per_accelerator_hour": 2.0},
                              "A100": {"contract_rate_per_accelerator_hour": 1.0}}}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    build_fleet = importlib.import_module("test_fleet_rollup").build_fleet   # a fleet with jobs, of two clusters
    return build_fleet(tmp_path_factory.mktemp("typed"))


def test_a_rollups_figures_are_of_their_typed_dict(fleet):
    from pau.fleet.rollup import RollupCosts, RollupFigures
    from pau.views import fleet_text
    assert returned(pau.fleet.rollup.Rollup.overall) is RollupFigures
    assert returned(fleet_text.figures) is fleet_text.FleetFigures
    for cost_model in (None, COST_MODEL):
        r = fleet.rollup(by=["cluster"], every="1d", cost_model=cost_model)
        starts = sorted(set(r.table["period_start_ns"].to_pylist()))
        assert len(starts) > 2
        for o in (r.overall(), r.overall(starts[1]), r.overall(starts[-1] + 1)):   # the last: no row
            assert conforms(o, RollupFigures), o
            # the cost keys exactly with a cost model: pau fleet's JSON has none without one
            assert (RollupCosts.__optional_keys__ <= o.keys()) == (cost_model is not None)
            assert o.keys() - RollupCosts.__optional_keys__ == RollupFigures.__required_keys__
        figures = fleet_text.figures(r)
        assert conforms(figures, fleet_text.FleetFigures)
        assert figures["last_period"] is not None and figures["last_period"]["period_start_ns"] == starts[-1]
        assert conforms(figures["last_period"], fleet_text.PeriodFigures)
    # the rollup's state columns are RollupFigures' ns keys
    state_ns = {k for k in RollupFigures.__required_keys__ if k.endswith("_ns")}
    assert state_ns - {"allocated_ns", "accountable_ns", "badput_ns", "queue_ns"} == set(
        pau.fleet.rollup._STATE_COLS)


def test_jobs_summary_is_its_typed_dict(fleet):
    from pau.fleet.archive import JobsSummary
    got = fleet.jobs_summary()
    assert returned(pau.fleet.archive.Fleet.jobs_summary) is JobsSummary and conforms(got, JobsSummary)
    assert got["jobs"] == fleet.jobs.num_rows and got["runs"] == fleet.runs.num_rows > 0


def test_figure_values_are_figure_values_by_runs_column(fleet):
    from pau.fleet import archive
    fv = archive.figure_values(fleet.run(fleet.keys()[0]).summary())
    assert conforms(fv, returned(archive.figure_values))
    assert all(conforms(v, archive.FigureValue) for v in fv.values())
    assert {type(v) for v in fv.values()} >= {int, float, list, type(None)}   # the check saw each kind
    # its keys: the runs table's columns made of a summary (FIGURES' and those after them)
    assert set(fv) == {c for c, _, _ in archive.FIGURES} | {
        "badput_by_cause_ns", "failure_ns", "recovery_ns", "energy_metric", "energy_j", "energy_productive_j",
        "failures_by_cause"} and set(fv) <= set(archive.RUNS_SCHEMA.names)


def test_accelerators_gained_gives_what_its_overloads_say():
    import numpy as np

    from pau.fleet.changes import accelerators_gained
    assert type(accelerators_gained(10, 11.5, 3)) is float and type(accelerators_gained(np.float64(1), 4, 3)) is float
    for args in (([0, 24], 24, 24), (0, np.array([24.0]), 24), (0, 24, [24, 12]), (np.array(0.0), 24, 24)):
        got = accelerators_gained(*args)
        assert isinstance(got, np.ndarray) and got.shape == np.broadcast(*map(np.asarray, args)).shape
    np.testing.assert_array_equal(accelerators_gained(0, 24, [24, 12]), [1.0, 2.0])


def test_sparse_sums_are_one_named_tuple():
    import numpy as np

    from pau.fleet import periods, pricing, sums
    assert pricing.Sparse is sums.Sparse is returned(sums.Acc.result)
    acc = sums.Acc(2, 3, periods.parse_every("1d"), 4)
    acc.add(np.array([1, 0, 1]), np.zeros(3, np.int64), np.array([2, 0, 2]), np.array([5, 7, 6], np.int64))
    got = acc.result()
    assert isinstance(got, sums.Sparse) and got.group.tolist() == [0, 1] and got.column.tolist() == [0, 2]
    assert got.value.tolist() == [7, 11] and got.start.tolist() == [0, 0]
