"""The size gate (issue 39): no Python or C++ function over 120 lines, no module over 900.

Python functions are measured with :mod:`ast`, from the ``def`` line to the last line;
C++ functions with lizard, the well-kept
function-length analyser (``pip install '.[test]'``). Files are counted in lines.

What is above the limits today is listed in ``LONG`` and ``BIG``, each entry debt to pay
by cutting into named steps or modules. A kernel whose speed needs its length, a data
table or a generated stub may stay on a list for good, with its reason beside it. The
lists may only shrink: a new unit above the limit fails, and so does a listed one that
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
LONG = {
    ("csrc/core/attrib.hpp", "pau::core::attribute_busy"),
    ("csrc/core/life_setup.hpp", "pau::core::life::setup"),
    ("csrc/core/life_setup.hpp", "pau::core::life::setup_jobs"),
    ("src/pau/_args.py", "parser"),
    ("src/pau/compat/ml_goodput.py", "_records"),
    ("src/pau/engine/_kernels.py", "attribute_pass"),
    ("src/pau/engine/_lifecycle.py", "_attribute"),
    ("src/pau/engine/distributed.py", "classify_partitions"),
    ("src/pau/figures/economics.py", "requests"),
    ("src/pau/figures/hardware.py", "cell_metrics"),
    ("src/pau/figures/interference.py", "interference"),
    ("src/pau/figures/recovery.py", "protection"),
    ("src/pau/figures/recovery.py", "recovery"),
    ("src/pau/fleet/ingester.py", "ingest"),
    ("src/pau/fleet/place.py", "at_scale"),
    ("src/pau/fleet/place.py", "placement"),
    ("src/pau/fleet/rollup.py", "rollup"),
    ("src/pau/readers/kineto.py", "_assemble"),
    ("src/pau/readers/megatron.py", "read_megatron"),
    ("src/pau/readers/mllog.py", "_read_one"),
    ("src/pau/readers/nsys.py", "read_nsys"),
    ("src/pau/readers/nvrx.py", "read_nvrx"),
    ("src/pau/readers/telemetry.py", "read_nvidia_smi"),
    ("src/pau/synth.py", "_generate_block"),
    ("src/pau/synth.py", "fleet"),
    ("src/pau/synth.py", "lifecycle_records"),
    ("src/pau/synth.py", "training_job"),
    ("src/pau/views/chrome_trace.py", "chrome_trace"),
    ("src/pau/views/html.py", "render"),
}

#: Files above MODULE_LINES today. `_core.pyi` is generated-shaped (one stub per binding).
BIG = {
    "csrc/core/life_setup.hpp",
    "csrc/core/sweep.hpp",
    "src/pau/compat/ml_goodput.py",
    "src/pau/figures/economics.py",
    "src/pau/fleet/rollup.py",
    "src/pau/readers/kineto.py",
    "src/pau/readers/telemetry.py",
    "src/pau/run.py",
    "src/pau/synth.py",
}


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
