"""The Python-C++ boundary stays narrow and typed (docs/architecture.md, the native API).

``src/pau/_core.pyi`` describes every function and class of the compiled module: no
function or method takes more than MAX_POSITIONAL positional parameters (the rest are
keyword-only, or one bound input), none returns a tuple of more than MAX_TUPLE
elements (results are bound classes with named attributes), and the stub cannot
drift from the module: the same names, the same parameters, the same keyword-only split.
"""

from __future__ import annotations

import ast
import pathlib
import re

import numpy as np
import pyarrow as pa
import pytest

import pau._core
from pau.engine import _native, _sweep
from pau.engine._input import event_columns
from pau.errors import InvalidRowError, InvalidWindowsError, PauError, UnsortedInputError

ROOT = pathlib.Path(__file__).resolve().parents[1]
STUB = ROOT / "src" / "pau" / "_core.pyi"
MAX_POSITIONAL = 8
MAX_TUPLE = 3


def _stub() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"))


def _functions(tree: ast.Module):
    """(qualified name, def) of every function and method of the stub."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    yield f"{node.name}.{item.name}", item


def _aliases(tree: ast.Module) -> dict[str, ast.expr]:
    """The stub's type aliases (``Name = <type>``), which exist in the stub only."""
    return {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


def _tuple_sizes(annotation: ast.expr | None, aliases: dict[str, ast.expr]) -> list[float]:
    """The element count of every ``tuple[...]`` in an annotation (aliases resolved;
    ``tuple[X, ...]`` counts as unbounded)."""
    sizes: list[float] = []
    seen: set[str] = set()

    def visit(node: ast.AST | None) -> None:
        if node is None:
            return
        for sub in ast.walk(node):
            if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and sub.value.id == "tuple":
                elts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
                unbounded = any(isinstance(e, ast.Constant) and e.value is Ellipsis for e in elts)
                sizes.append(float("inf") if unbounded else len(elts))
            elif isinstance(sub, ast.Name) and sub.id in aliases and sub.id not in seen:
                seen.add(sub.id)
                visit(aliases[sub.id])

    visit(annotation)
    return sizes


def _positional(fn: ast.FunctionDef) -> list[str]:
    return [a.arg for a in fn.args.posonlyargs + fn.args.args]


def test_at_most_eight_positional_parameters():
    wide = {name: len(_positional(fn)) for name, fn in _functions(_stub())
            if len(_positional(fn)) > MAX_POSITIONAL}
    assert not wide, f"more than {MAX_POSITIONAL} positional parameters (make the rest keyword-only): {wide}"


def test_no_tuple_of_more_than_three():
    tree = _stub()
    aliases = _aliases(tree)
    long = {name: max(sizes) for name, fn in _functions(tree)
            if (sizes := _tuple_sizes(fn.returns, aliases)) and max(sizes) > MAX_TUPLE}
    assert not long, f"returns a tuple of more than {MAX_TUPLE} (bind a result class): {long}"


def test_no_bare_dict_or_any_returned_by_results():
    """A result is a bound class or a typed container, never a bare ``dict``."""
    bare = [name for name, fn in _functions(_stub())
            if isinstance(fn.returns, ast.Name) and fn.returns.id in ("dict", "Any", "tuple", "list")]
    assert not bare, f"untyped returns: {bare}"


def _stub_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_stub_names_match_the_module():
    tree = _stub()
    compiled = {n for n in dir(pau._core) if not n.startswith("__")} | {"__version__"}
    stub = _stub_names(tree)
    assert stub == compiled, (f"in the module, not the stub: {sorted(compiled - stub)}; "
                              f"in the stub, not the module: {sorted(stub - compiled)}")
    assert not set(_aliases(tree)) & compiled, "a stub alias shadows a name of the module"


def test_stub_class_members_match_the_module():
    for node in _stub().body:
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(pau._core, node.name)
        stub = {i.name for i in node.body if isinstance(i, ast.FunctionDef)} | {
            i.target.id for i in node.body if isinstance(i, ast.AnnAssign) and isinstance(i.target, ast.Name)}
        if issubclass(cls, BaseException):
            # set when raised (errors.cpp): test_a_feed_error_carries_code_row_and_batch reads them
            assert stub == {"code", "row", "batch"}, f"{node.name}: {sorted(stub)}"
            continue
        own = {n for n in vars(cls) if not n.startswith("_")}
        for base in cls.__mro__[1:]:
            own -= {n for n in vars(base) if not n.startswith("_")}
        stub_own = {n for n in stub if not n.startswith("_")}
        assert stub_own == own, f"{node.name}: module {sorted(own)}, stub {sorted(stub_own)}"
        if "__init__" in stub:
            assert "__init__" in vars(cls), f"{node.name}: the stub has __init__, the class cannot be built"


def _split_top(text: str) -> list[str]:
    """``text`` split at commas outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _compiled_signature(obj, name: str) -> tuple[list[str], list[str]]:
    """(positional, keyword-only) parameter names of a pybind11 function, from the
    signature line of its docstring (the first overload's for overloaded ones)."""
    doc = obj.__doc__ or ""
    overloaded = "Overloaded function." in doc.splitlines()[1:2]
    match = re.search(rf"^{'1. ' if overloaded else ''}{re.escape(name)}\((.*)\) ->", doc, re.M)
    assert match, f"{name}: no signature in its docstring"
    positional: list[str] = []
    keyword: list[str] = []
    target = positional
    for part in _split_top(match.group(1)):
        if part == "*":
            target = keyword
            continue
        target.append(part.split(":")[0].split("=")[0].strip())
    return positional, keyword


def _stub_signature(fn: ast.FunctionDef) -> tuple[list[str], list[str]]:
    return _positional(fn), [a.arg for a in fn.args.kwonlyargs]


@pytest.mark.parametrize("name", sorted(n for n, _ in _functions(_stub())))
def test_stub_signatures_match_the_module(name):
    fn = dict(_functions(_stub()))[name]
    if fn.decorator_list:  # properties
        return
    owner_name, _, attr = name.rpartition(".")
    owner = getattr(pau._core, owner_name) if owner_name else pau._core
    if owner_name and issubclass(owner, BaseException):
        return
    obj = getattr(owner, attr)
    got_pos, got_kw = _compiled_signature(obj, attr)
    want_pos, want_kw = _stub_signature(fn)
    assert (got_pos, got_kw) == (want_pos, want_kw), f"{name}: module ({got_pos}, *, {got_kw})"
    assert len(got_pos) <= MAX_POSITIONAL, f"{name}: {len(got_pos)} positional parameters in the module"


def test_the_gate_catches_a_wide_function():
    """The checks above fail on what they forbid (a stub they must reject)."""
    bad = ast.parse("def f(a, b, c, d, e, f, g, h, i) -> tuple[int, int, int, int]: ...\n"
                    "T = tuple[int, int, int, int]\n"
                    "def g(a) -> T | None: ...\n"
                    "def h(a) -> tuple[int, ...]: ...\n")
    fns = dict(_functions(bad))
    assert len(_positional(fns["f"])) == 9
    aliases = _aliases(bad)
    assert max(_tuple_sizes(fns["f"].returns, aliases)) == 4
    assert max(_tuple_sizes(fns["g"].returns, aliases)) == 4
    assert max(_tuple_sizes(fns["h"].returns, aliases)) == float("inf")


def _events(rank, start, end, kind):
    return pa.table({"rank": pa.array(rank, pa.int32()), "start_ns": pa.array(start, pa.int64()),
                     "end_ns": pa.array(end, pa.int64()), "kind": pa.array(kind).dictionary_encode()})


def test_a_feed_error_carries_code_row_and_batch():
    """The core raises (no error triple); the one translation point names the row."""
    ok = _events([0], [0], [4], ["compute"])
    bad = _events([1, 1, 1], [0, 5, 3], [1, 6, 4], ["compute"] * 3)  # row 2 starts before row 1
    cols = [event_columns(b) for b in ok.to_batches() + bad.to_batches()]
    plan = _sweep.Plan()
    with pytest.raises(pau._core.FeedError) as raw:
        pau._core.sweep_batches(plan.win_rank, plan.win_start, plan.win_end, plan.win_row, plan.span_rank,
                                plan.span_start, plan.span_end, bucket=0, batches=_sweep.batch_arrays(cols), parts=1)
    assert isinstance(raw.value, ValueError)
    assert (raw.value.code, raw.value.row, raw.value.batch) == (_native.UNSORTED, 2, 1)
    with pytest.raises(UnsortedInputError, match=r"row 3: start_ns decreases within rank 1"):
        _sweep.sweep_parts(plan, cols, 1, batches=ok.to_batches() + bad.to_batches())
    with pytest.raises(PauError, match=r"row 2 of batch 1: the native sweep could not take it \(code 5\)"):
        _sweep.sweep_parts(plan, cols, 1)  # without the batches, the error still names the row
    # the in-memory path sweeps such input again in (rank, start) order
    got = _sweep.hist_of_table(pa.concat_tables([ok, bad]), plan, "raise", threads=1)[0]
    ordered = _events([0, 1, 1, 1], [0, 0, 3, 5], [4, 1, 4, 6], ["compute"] * 4)
    want = _sweep.hist_of_table(ordered, plan, "raise", threads=1)[0]
    assert set(got) == set(want) and all(np.array_equal(got[k], want[k]) for k in want)


def test_window_errors_become_invalid_windows():
    def boom():
        raise ValueError("windows.start_ns: expected a 1-d array of the same length as rank")

    with pytest.raises(InvalidWindowsError, match="windows.start_ns"):
        _native.call(boom)
    with pytest.raises(ValueError, match="levels") as other:
        _native.call(lambda: (_ for _ in ()).throw(ValueError("levels: expected")))
    assert not isinstance(other.value, InvalidRowError)
