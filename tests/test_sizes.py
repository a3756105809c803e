"""The size gate (issue 39): no Python or C++ function over 120 lines, no module over 900.

Python functions are measured with :mod:`ast`, from the ``def`` line to the last line;
C++ functions with lizard, the well-kept
function-length analyser (``pip install '.[test]'``). Files are counted in lines.

Nothing is above the limits: ``LONG`` and ``BIG`` are empty. A kernel whose speed needs
its length, a data table or a generated stub may go on a list, with its reason beside
it; a new unit above the limit that is not listed fails, and so does a listed one that
is no longer above it (take it off the list).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FUNCTION_LINES = 120
MODULE_LINES = 900

#: (file, function) above FUNCTION_LINES today.
LONG: set[tuple[str, str]] = set()

#: Files above MODULE_LINES today (`_core.pyi` is measured too).
BIG: set[str] = set()


def _sources() -> list[pathlib.Path]:
    files = sorted((ROOT / "src" / "pau").rglob("*.py"))
    files += sorted(p for p in (ROOT / "csrc").rglob("*") if p.suffix in (".cpp", ".hpp"))
    return files


def _python_functions(path: pathlib.Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None]


def _cpp_functions(path: pathlib.Path) -> list[tuple[str, int]]:
    lizard = pytest.importorskip("lizard", reason="lizard is not installed (pip install '.[test]')")
    return [(f.name, f.length) for f in lizard.analyze_file(str(path)).function_list]


def _rel(path: pathlib.Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_no_function_above_the_limit_but_the_listed_ones():
    found = set()
    for path in _sources():
        units = _python_functions(path) if path.suffix == ".py" else _cpp_functions(path)
        found |= {(_rel(path), name) for name, lines in units if lines > FUNCTION_LINES}
    new = sorted(found - LONG)
    assert not new, f"functions over {FUNCTION_LINES} lines (cut them into named steps): {new}"
    paid = sorted(LONG - found)
    assert not paid, f"no longer over {FUNCTION_LINES} lines: take them off LONG in tests/test_sizes.py: {paid}"


def test_no_module_above_the_limit_but_the_listed_ones():
    found = {_rel(p) for p in _sources() + [ROOT / "src" / "pau" / "_core.pyi"]
             if len(p.read_text(encoding="utf-8").splitlines()) > MODULE_LINES}
    new = sorted(found - BIG)
    assert not new, f"files over {MODULE_LINES} lines (split them by concept): {new}"
    paid = sorted(BIG - found)
    assert not paid, f"no longer over {MODULE_LINES} lines: take them off BIG in tests/test_sizes.py: {paid}"
