"""Each heavy C++ core header is compiled in one translation unit (issue 39).

The core's code lives in headers under ``csrc/core/``; a header that two translation
units (TUs) include is compiled twice, and an edit of it rebuilds both. The rule:

* a core header is **heavy** when it defines a function longer than ``TINY_LINES``
  lines (lizard's length, the measure of ``tests/test_sizes.py``), template or not (a
  template instantiated in two TUs is compiled twice as well). The others hold types,
  declarations and small inline helpers, and any TU may include them;
* every heavy header is reached from at most one TU that ``setup.py`` compiles,
  following ``#include "..."`` transitively (core headers include each other).

A TU that needs another's code includes a light declaration header instead
(``core/sweep_api.hpp``), and the definitions are compiled once (``core/*.cpp``, or the
binding TU that owns the code). The fuzz targets (``csrc/fuzz/``) are built apart and not
counted.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TINY_LINES = 20
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def _translation_units() -> list[pathlib.Path]:
    """The sources of setup.py's extension: the globs in its Pybind11Extension call."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "Pybind11Extension"]
    assert len(calls) == 1, "setup.py: expected one Pybind11Extension"
    sources = calls[0].args[1]
    patterns = [n.args[0].value for n in ast.walk(sources)
                if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "glob"
                and isinstance(n.args[0], ast.Constant)]
    assert patterns, "setup.py: no glob(...) in the extension's sources"
    return sorted({p for pattern in patterns for p in ROOT.glob(pattern)})


def _reached(path: pathlib.Path, seen: set[pathlib.Path] | None = None) -> set[pathlib.Path]:
    """The files `path` includes with quotes, transitively (paths relative to the includer)."""
    seen = set() if seen is None else seen
    for name in _INCLUDE.findall(path.read_text(encoding="utf-8")):
        target = (path.parent / name).resolve()
        assert target.exists(), f"{_rel(path)}: #include \"{name}\" names no file"
        if target not in seen:
            seen.add(target)
            _reached(target, seen)
    return seen


def _rel(path: pathlib.Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()


def _heavy_headers() -> dict[str, int]:
    """Heavy core headers and the length of their longest function."""
    lizard = pytest.importorskip("lizard", reason="lizard is not installed (pip install '.[test]')")
    out = {}
    for path in sorted((ROOT / "csrc" / "core").glob("*.hpp")):
        longest = max((f.length for f in lizard.analyze_file(str(path)).function_list), default=0)
        if longest > TINY_LINES:
            out[_rel(path)] = longest
    return out


def _units_reaching() -> dict[str, list[str]]:
    """Per header, the TUs that reach it."""
    by_header: dict[str, list[str]] = {}
    for unit in _translation_units():
        for header in _reached(unit):
            by_header.setdefault(_rel(header), []).append(_rel(unit))
    return by_header


def test_every_heavy_header_is_compiled_in_at_most_one_unit():
    by_header = _units_reaching()
    shared = {h: (lines, by_header[h]) for h, lines in _heavy_headers().items() if len(by_header.get(h, [])) > 1}
    assert not shared, (
        "heavy core headers (a function over %d lines) compiled in more than one translation unit "
        "(longest function, units): %s. Fix: move what the other units need behind a light "
        "declaration header, its definitions compiled once (see docs/architecture.md)" % (TINY_LINES, shared))


def test_the_rule_sees_the_sweeps_and_their_light_header():
    # The parser and the rule see what they must: the sweep's headers are heavy and
    # reached from the unit that binds them; its declaration header is light and shared.
    heavy = _heavy_headers()
    by_header = _units_reaching()
    units = [_rel(u) for u in _translation_units()]
    assert "csrc/module.cpp" in units and "csrc/core/sweep_api.cpp" in units
    for header in ("csrc/core/sweep.hpp", "csrc/core/exclusive.hpp", "csrc/core/split.hpp", "csrc/core/order.hpp"):
        assert header in heavy
        assert by_header[header] == ["csrc/bindings/sweep.cpp"]
    assert "csrc/core/sweep_api.hpp" not in heavy
    assert len(by_header["csrc/core/sweep_api.hpp"]) >= 3
