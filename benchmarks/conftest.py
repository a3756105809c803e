"""Fixtures of the benchmark suites.

Benchmarks are tests (STYLE habit 7): every benchmark also asserts its answer, so
CI runs this directory with ``--benchmark-disable`` (pyproject ``addopts``) and each
function runs once. For timings::

    python -m pytest benchmarks -p no:cacheprovider --benchmark-enable \\
        --benchmark-columns=min,median,mean,rounds --benchmark-sort=name

Environment: ``PAU_BENCH_SCALE`` (float, default 1.0) scales every event count for a
quick run; ``PAU_BENCH_BIG_EVENTS`` sets the big file of the memory test (see
:mod:`bench_config`).

Data come from :mod:`pau.synth` (seeded), generated once per session and case.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pytest

import engines
import pau.synth
from bench_config import SEED, ConfigError, big_events, events_label, scale, scaled

# --------------------------------------------------------------------------- in-memory cases

#: (target events before scaling, ranks)
CASES = {
    "1M-8r": (1_000_000, 8),
    "10M-8r": (10_000_000, 8),
    "1M-1024r": (1_000_000, 1024),
}


@dataclass
class Case:
    """One input of the in-memory benchmarks, prepared outside every timed region."""

    id: str
    table: pa.Table               # as pau.synth produced it: sorted by (rank, start), kind dictionary
    columns: tuple                # numpy (rank, start, end, kind int8 codes) for Numba
    duckdb: object                # connection with `table` registered as "events"
    reference: engines.Numbers    # pau's numbers (pau.core.overlap), computed once
    requested_ranks: int

    @property
    def n(self) -> int:
        return self.table.num_rows

    @property
    def ranks(self) -> int:
        return int(self.reference.rank.size)

    @property
    def group(self) -> str:
        return f"classify {events_label(self.n)} events x {self.ranks} ranks"


@pytest.fixture(scope="session", params=list(CASES), ids=list(CASES))
def case(request) -> Case:
    target, ranks = CASES[request.param]
    table = pau.synth.training_run_for_events(scaled(target), ranks=ranks, seed=SEED)
    columns = engines.numpy_columns(table)   # kind dictionary -> int8 codes, untimed
    engines.numba_sweep(*columns)             # compile (or load the cache) untimed
    engines.numba_exclusive(*columns)         # likewise
    con = engines.duckdb_connect(table)
    reference = engines.pau_numbers(table)
    yield Case(request.param, table, columns, con, reference, ranks)
    con.close()


# --------------------------------------------------------------------------- reporting

_NOTES: list[str] = []


@pytest.fixture(scope="session")
def report_note():
    """Append a line to the summary printed at the end of the session."""
    return _NOTES.append


def pytest_configure(config):
    try:  # fail at start-up, not in the middle of a long run
        scale()
        big_events()
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.fixture
def note_rate(report_note, request):
    """``note_rate(benchmark, events)``: note the median rate once the benchmark ran."""

    def note(benchmark, events: int) -> None:
        stats = getattr(benchmark, "stats", None)
        if stats is None:  # --benchmark-disable: nothing was timed
            return
        median = stats.stats.median
        report_note(f"{benchmark.group}: {request.node.name}: median {median * 1e3:.1f} ms, "
                    f"{events / median / 1e6:.1f} M events/s")

    return note


def pytest_terminal_summary(terminalreporter):
    if _NOTES:
        terminalreporter.section("pau benchmark notes")
        for line in _NOTES:
            terminalreporter.write_line(line)
