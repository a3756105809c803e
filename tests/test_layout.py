"""The package's layers point one way (docs/architecture.md).

Every module of ``src/pau`` has a level; a module imports only modules of its own
level or below, the imports form no cycle, and no pau import hides inside a
function. The C++ core knows nothing of Python.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import pau
import pau.core
from pau import errors

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "pau"

#: The tiers, bottom to top: each subpackage (or top-level module) is one level of the
#: package, and a module imports only from its own tier or below. Within a tier, LEVELS
#: orders the modules.
TIERS = [
    ("errors", {"pau.errors"}),
    ("engine", {"pau.engine"}),       # columns in, exact ledgers out: no files of other tools, no figures
    ("readers", {"pau.readers"}),     # other tools' files in
    ("figures", {"pau.figures", "pau.compat"}),  # figures over ledgers and runs; other tools' definitions
    ("run", {"pau.run", "pau._run_tables", "pau.synth"}),  # one in-memory run from every reader; synthetic runs
    ("fleet", {"pau.fleet"}),         # many runs over time: the archive, rollups, changes, cost basis
    ("views", {"pau.views"}),         # text, plots, the HTML page, the Chrome trace, the console
    ("facade", {"pau.core"}),
    ("front", {"pau.cli", "pau._args", "pau"}),  # the command line and the package's front door
]


def tier_of(module: str) -> int:
    best, depth = None, -1
    for i, (_, prefixes) in enumerate(TIERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and p.count(".") > depth:
                best, depth = i, p.count(".")
    assert best is not None, f"{module} is in no tier of tests/test_layout.py"
    return best


#: Bottom to top. A new module must be given a level here.
LEVELS = [
    # errors: imports nothing of pau
    {"pau.errors"},
    # the engine's vocabulary and types
    {"pau.engine", "pau.engine.vocab", "pau.engine.types", "pau.engine._format", "pau.engine._names"},
    # input adapters and process-wide helpers
    {"pau.engine._input", "pau.engine._search", "pau.engine._jit", "pau.engine._threads", "pau.engine._progress"},
    # kernels (the native pau._core is compiled, not listed) and the one translation of its errors
    {"pau.engine._kernels", "pau.engine._econ_kernels", "pau.engine._native"},
    # lifecycle attribution's set-up: reading the table, its checks, the native set-up
    {"pau.engine._life_setup"},
    # the rollback attribution's pass over the steps, given the set-up
    {"pau.engine._life_attrib"},
    # the engine's parts: sweep planning, lifecycle attribution, crossing, the ledger
    {"pau.engine._sweep", "pau.engine._lifecycle", "pau.engine._crossing", "pau.engine.ledger"},
    # pau's archive layout: Parquet streaming and the native page decoder's row groups
    {"pau.engine._parquet", "pau.engine.io"},
    # partitions over executors and Dask (the engine sweeps archives through it)
    {"pau.engine.distributed"},
    # the engine's entry points
    {"pau.engine.api"},
    # readers' data tables and shared parts
    {"pau.readers.devices", "pau.readers.mlperf_rules", "pau.readers._files", "pau.readers.detect",
     "pau.readers.scheduler", "pau.readers._kineto_rules", "pau.readers._kineto_parse"},
    # the telemetry samples table and what its readers share
    {"pau.readers.samples"},
    # telemetry readers, one per tool (the Nsight one, beside the Nsight reader, below)
    {"pau.readers.nvidia_smi", "pau.readers.dcgm", "pau.readers.amd_smi"},
    # readers: other tools' files in
    {"pau.readers", "pau.readers.kineto", "pau.readers.nsys", "pau.readers.mllog", "pau.readers.serving",
     "pau.readers.slurm", "pau.readers.telemetry", "pau.readers.kubernetes", "pau.readers.megatron",
     "pau.readers.nvrx", "pau.readers.alibaba", "pau.readers.nsys_metrics"},
    # figures: the helpers they share
    {"pau.figures", "pau.figures._common"},
    # figures over ledgers and runs; other tools' definitions on the same ledger
    {"pau.figures.align", "pau.figures.hardware", "pau.figures.idle", "pau.figures.stragglers",
     "pau.figures.interference", "pau.figures.goodput", "pau.figures.recovery",
     "pau.compat", "pau.compat.hta", "pau.compat.ml_goodput", "pau.compat.mlg_entries",
     "pau.compat.mlg_library", "pau.compat.mlg_lifecycle"},
    # figures over those: economics (telemetry's energy), the layers (FLOPs, telemetry)
    {"pau.figures.economics", "pau.figures.layers"},
    # cost and energy of a ledger or of requests (economics' RequestLedger)
    {"pau.figures.cost"},
    # two runs side by side (cost)
    {"pau.figures.compare"},
    # synthetic inputs: what the generators share; the events of a run, step by step
    {"pau.synth._common", "pau.synth.trace"},
    # synthetic inputs: events to Parquet, a job's lifecycle, big lifecycle tables, fleets
    {"pau.synth.parquet", "pau.synth.job", "pau.synth.records", "pau.synth.fleets"},
    # a run's tables from the readers' output and its files
    {"pau._run_tables"},
    # the run: one in-memory form of a run from every reader; synthetic inputs' front
    {"pau.run", "pau.synth"},
    # a fleet rollup's parts: periods, exact sums, group keys and filters, the cells' kernel
    {"pau.fleet.periods", "pau.fleet.sums", "pau.fleet.groups", "pau.fleet._cells"},
    # the hourly cells read and summed
    {"pau.fleet.cellsums"},
    # fleets: figures over many runs' periods (pure functions of arrays and tables); the archive
    {"pau.fleet.changes", "pau.fleet.costs", "pau.fleet.reliability", "pau.fleet.pricing", "pau.fleet.rollup",
     "pau.fleet.archive"},
    # placement across hardware generations: cost per trained model from runs, costs and reliability
    {"pau.fleet.place"},
    # scheduler records and lifecycle logs into the archive
    {"pau.fleet.records"},
    # ingest; the subpackage's front
    {"pau.fleet.ingester"},
    {"pau.fleet"},
    # views
    {"pau.views", "pau.views.chrome_trace", "pau.views.plots", "pau.views.html", "pau.views.console",
     "pau.views.text", "pau.views.openmetrics", "pau.views.fleet_html", "pau.views.fleet_text"},
    # the facade
    {"pau.core"},
    # the command line and the package's front door
    {"pau.cli", "pau._args", "pau"},
]
LEVEL = {m: i for i, ms in enumerate(LEVELS) for m in ms}


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name.removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _targets(module: str, path: pathlib.Path, node: ast.AST) -> set[str]:
    """The pau modules an import statement names."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(parts + ([base] if base else []))
        # `from X import a`: the module X.a when there is one, else X itself
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES or f"{base}.{a.name}" == "pau._core"
                 else base for a in node.names]
        # `from pkg import sub` inside pkg itself goes through pkg's front (its __init__,
        # which may import this module): an edge to the package, so such a cycle shows
        if base != "pau" and base in MODULES and MODULES[base].name == "__init__.py" and module.startswith(base + "."):
            names.append(base)
    else:
        names = [a.name for a in node.names]
    out = set()
    for n in names:
        while n and n not in MODULES and n != "pau._core":
            n = n.rsplit(".", 1)[0] if "." in n else ""
        if n and n != module and n != "pau._core":
            out.add(n)
    return out


def _imports() -> tuple[dict[str, set[str]], list[str]]:
    """Module -> pau modules it imports; and the imports found inside functions."""
    edges: dict[str, set[str]] = {}
    inner: list[str] = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        edges[module] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges[module] |= _targets(module, path, node)
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)) and _targets(module, path, node):
                        inner.append(f"{path.relative_to(ROOT)}:{node.lineno} in {fn.name}()")
    return edges, inner


EDGES, INNER = _imports()


def test_every_module_has_a_level():
    missing = sorted(set(MODULES) - set(LEVEL))
    assert not missing, f"give these modules a level in tests/test_layout.py: {missing}"
    gone = sorted(set(LEVEL) - set(MODULES))
    assert not gone, f"LEVELS names modules that do not exist: {gone}"


def test_no_upward_import():
    upward = []
    for module, targets in EDGES.items():
        for t in targets:
            if t != "pau._core" and t != "pau" and LEVEL[t] > LEVEL[module]:
                upward.append(f"{module} (level {LEVEL[module]}) imports {t} (level {LEVEL[t]})")
            if t == "pau" and module != "pau":
                upward.append(f"{module} imports the package pau itself")
    assert not upward, "\n".join(sorted(upward))


def test_tiers_point_one_way():
    """Each subpackage is one tier: no module imports from a tier above its own, and the
    levels of LEVELS never interleave two tiers."""
    upward = [f"{m} ({TIERS[tier_of(m)][0]}) imports {t} ({TIERS[tier_of(t)][0]})"
              for m, ts in EDGES.items() for t in ts if t != "pau" and tier_of(t) > tier_of(m)]
    assert not upward, "\n".join(sorted(upward))
    by_level = [tier_of(m) for ms in LEVELS for m in sorted(ms)]
    assert by_level == sorted(by_level), "LEVELS must list the tiers in TIERS' order"


def test_no_import_cycle():
    def reaches(a: str, b: str) -> bool:
        stack, seen = [a], set()
        while stack:
            x = stack.pop()
            if x == b:
                return True
            if x not in seen:
                seen.add(x)
                stack.extend(EDGES.get(x, ()))
        return False

    cycles = sorted(f"{a} -> {b} -> ... -> {a}" for a, ts in EDGES.items() for b in ts if reaches(b, a))
    assert not cycles, "\n".join(cycles)


def test_no_pau_import_inside_a_function():
    assert not INNER, "pau imports inside functions (move them to the top of the module):\n" + "\n".join(INNER)


#: The only dynamic imports in pau, each for start-up time (issue: `pau --help` without
#: numpy, pyarrow or Numba): the package's lazy public names, and the console script
#: running a parsed command. Both import downward or level with themselves.
DYNAMIC = {("pau", "__getattr__"), ("pau._args", "main")}


def _dynamic_imports() -> set[tuple[str, str]]:
    out = set()
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                            and node.func.attr in ("import_module", "__import__")) or (
                            isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                            and node.func.id == "__import__"):
                        arg = node.args[0] if node.args else None
                        third_party = (isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                                       and not arg.value.startswith(("pau", ".")))
                        if not third_party:  # numba, loaded on first use by pau.engine._jit, is not pau
                            out.add((module, fn.name))
    return out


def test_dynamic_imports_are_the_two_start_up_ones():
    assert _dynamic_imports() == DYNAMIC
    # their targets point down or level: the package's names come from the facade and the
    # run; the console script runs pau.cli, on its own level
    assert set(pau._LAZY.values()) == {"pau.core", "pau.run"}
    assert all(LEVEL[m] <= LEVEL["pau"] for m in pau._LAZY.values())
    assert LEVEL["pau.cli"] == LEVEL["pau._args"]


def test_the_facade_imports_without_numba():
    import subprocess
    import sys

    code = "import sys, pau.core; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"  # the kernels load Numba on their first call (pau.engine._jit)


def test_the_command_line_parses_without_numpy_pyarrow_or_numba():
    import subprocess
    import sys

    code = ("import sys, pau, pau._args; pau._args.parser().parse_args(['report']); "
            "print(sorted(m for m in ('numpy', 'pyarrow', 'numba') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_nothing_imports_the_facade():
    users = sorted(m for m, ts in EDGES.items() if "pau.core" in ts and m not in ("pau.cli", "pau"))
    assert not users, f"pau.core is the facade; these modules import it: {users}"


def test_the_native_core_knows_no_python():
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "csrc" / "core").rglob("*")
                 if p.is_file() and ("pybind11" in p.read_text() or "Python.h" in p.read_text())]
    assert not offenders, offenders


@pytest.mark.parametrize("bad", ["def f():\n    from . import core\n", "def f():\n    import pau.engine.io\n"])
def test_the_check_sees_a_function_level_import(tmp_path, bad):
    """The inner-import check is not vacuous: it flags a pau import in a function."""
    path = SRC / "_vocab.py"
    tree = ast.parse(bad)
    fn = tree.body[0]
    hits = [n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))
            and _targets("pau.engine.vocab", path, n)]
    assert hits


def test_compiled_module_is_private_and_public_api_is_curated():
    assert "_core" not in pau.__all__
    for name in ("classify", "overlap", "ledger", "classify_dataset", "Ledger", "errors"):
        assert name in pau.__all__
    for name in pau.core.__all__:
        assert hasattr(pau.core, name)


def test_package_ships_typing_markers():
    pkg = pathlib.Path(pau.__file__).parent
    assert (pkg / "py.typed").exists()
    assert (pkg / "_core.pyi").exists()


def test_errors_are_value_errors():
    for name in errors.__all__:
        if name == "Interrupted":
            # Ctrl-C is not bad input: `except ValueError` must not swallow it.
            assert issubclass(errors.Interrupted, KeyboardInterrupt)
            assert not issubclass(errors.Interrupted, ValueError)
        else:
            assert issubclass(getattr(errors, name), ValueError)


def test_importing_pau_stays_light():
    """`import pau` loads neither pandas nor pyarrow.dataset (pyarrow.dataset imports
    pandas, which doubled pau's import time): they are optional extras."""
    import subprocess
    import sys

    code = "import sys, pau, pau.core, pau.engine.io; print(sorted(m for m in ('pandas', 'pyarrow.dataset') if m in sys.modules))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"
