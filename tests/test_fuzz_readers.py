"""Mutation tests of the Nsight, MLPerf, serving and Parquet readers (issue 19, item 8).

Each case mutates a real sample from ``tests/data`` (truncation, bit and byte flips, a
slice cut or doubled, a JSON value swapped for another type or an extreme number, a
SQLite cell set to a value of the wrong type) with a seed of its own, reads it with
:func:`pau.read` and holds the answer to the suite's rule (:func:`fuzz.run_case`):

* a :class:`pau.errors.PauError` that names the file; or
* a run whose figures hold: every rank's activities sum to its span exactly; the
  ledger's states sum to accountable time; no record is lost (rows read plus rows set
  aside equal the rows of the input, where the mutation kept the count); and for
  pau's Parquet layout, whose pages carry checksums, the very figures of the
  unmutated run; for an MLPerf log, the line ``on_invalid="raise"`` refuses is the
  first that ``"quarantine"`` sets aside (none, and the same figures, when it reads).

``PAU_FUZZ_CASES=N`` runs N cases per test instead of :data:`fuzz.DEFAULT_CASES`.
The Kineto reader's fuzz test is ``tests/test_fuzz_kineto.py``.
"""

from __future__ import annotations

import random
import shutil
import sqlite3

import numpy as np
import pyarrow.compute as pc
import pytest

import pau
import pau.core
from pau.errors import MLLogError, PauError
from pau.readers.nsys import read_nsys

import fuzz
from shared_data import shared

SEED = 19


def _conserves(run: pau.Run, name: str) -> None:
    """Every rank's activities sum to its span, and a ledger's states to accountable time."""
    if run.events is not None and run.events.num_rows:
        c = fuzz.run_case(name, lambda: pau.core.classify(run.events, span=run.spans))
        if c is None:   # refused (a PauError): nothing to conserve
            return
        got = dict(zip(*c.group_by("rank").aggregate([("duration_ns", "sum")]).to_pydict().values()))
        want = {r: e - s for r, s, e in zip(*run.spans.to_pydict().values())}
        assert got == want, name
    summary = fuzz.run_case(name, run.summary)
    if summary is not None and summary["ledger"] is not None:
        led = summary["ledger"]
        assert sum(led["state_ns"].values()) == led["accountable_ns"], name


# --- Nsight -------------------------------------------------------------------------

NSYS = shared("nsys", "icon_isc25", "gpu.sqlite")
NSYS_EVENTS = 5524
_NSYS_CELLS = {   # table -> columns a fuzzer sets to a value of the wrong type
    "CUPTI_ACTIVITY_KIND_KERNEL": ("start", "end", "deviceId", "streamId", "globalPid", "shortName"),
    "CUPTI_ACTIVITY_KIND_MEMCPY": ("start", "end", "deviceId", "streamId", "globalPid", "bytes", "copyKind"),
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": ("start", "end", "deviceId", "streamId", "globalPid", "syncType"),
}
_NSYS_FILE_CELLS = {   # tables whose one bad cell may refuse the whole file
    "TARGET_INFO_SESSION_START_TIME": ("utcEpochNs",), "ANALYSIS_DETAILS": ("duration",),
    "NVTX_EVENTS": ("start", "end", "globalTid", "textId", "text"), "StringIds": ("value", "id"),
    "TARGET_INFO_GPU": ("id", "name"), "META_DATA_EXPORT": ("value",),
}


def test_nsys_bytes(tmp_path):
    """Truncated, flipped and spliced exports."""
    data = NSYS.read_bytes()
    for k in range(fuzz.cases()):
        rng = random.Random(f"{SEED}-nsys-bytes-{k}")
        mutate = rng.choice(fuzz.BYTE_MUTATIONS)
        p = tmp_path / f"case{k}.sqlite"
        p.write_bytes(mutate(rng, data))
        name = f"nsys bytes case {k} ({mutate.__name__})"
        run = fuzz.run_case(name, lambda: pau.read(p, format="nsys", on_invalid="quarantine"), names=str(p))
        if run is not None:
            _conserves(run, name)
        p.unlink()


def test_nsys_values(tmp_path):
    """One cell of the export set to a value of the wrong type or at the int64 edge: the
    row is set aside (and counted) or the file refused; no event is lost or wrapped."""
    tables = list(_NSYS_CELLS.items()) * 2 + list(_NSYS_FILE_CELLS.items())
    for k in range(fuzz.cases()):
        rng = random.Random(f"{SEED}-nsys-values-{k}")
        table, columns = rng.choice(tables)
        column, value = rng.choice(columns), rng.choice(fuzz.EXTREME_SQL)
        p = tmp_path / f"case{k}.sqlite"
        shutil.copyfile(NSYS, p)
        con = sqlite3.connect(p)
        n = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        rowid = con.execute(f"SELECT rowid FROM {table} LIMIT 1 OFFSET ?", (rng.randrange(n),)).fetchone()[0]
        try:
            con.execute(f'UPDATE {table} SET "{column}" = ? WHERE rowid = ?', (value, rowid))
        except sqlite3.IntegrityError:   # a NOT NULL or key column keeps its value
            con.close()
            continue
        con.commit()
        con.close()
        name = f"nsys values case {k} ({table}.{column} rowid {rowid} = {value!r})"
        trace = fuzz.run_case(name, lambda: read_nsys(p, on_invalid="quarantine"), names=str(p))
        if trace is not None:
            lost = NSYS_EVENTS - trace.events.num_rows - trace.quarantine.filter(
                pc.match_substring(trace.quarantine["table"], "CUPTI")).num_rows
            assert lost == 0, f"{name}: {lost} events neither read nor set aside"
            assert trace.events["end_ns"].to_numpy().min() >= trace.events["start_ns"].to_numpy().min(), name
            run = fuzz.run_case(name, lambda: pau.read(p, on_invalid="quarantine"), names=str(p))
            if run is not None:
                _conserves(run, name)
        p.unlink()


# --- MLPerf ---------------------------------------------------------------------------

MLPERF = shared("mlperf", "training_v4.0", "Intel-HabanaLabs")
_MLLOG = ("results", "HLS-Gaudi2-PT", "llama2_70b_lora", "result_0.txt")


def test_mllog(tmp_path):
    """Mutated MLPerf logs, in the MLPerf layout (the system JSON beside the results)."""
    root = tmp_path / "Intel-HabanaLabs"
    shutil.copytree(MLPERF, root)
    log = root.joinpath(*_MLLOG)
    data = log.read_bytes()
    for k in range(fuzz.cases()):
        rng = random.Random(f"{SEED}-mllog-{k}")
        mutate = rng.choice(fuzz.TEXT_MUTATIONS)
        log.write_bytes(mutate(rng, data))
        name = f"mllog case {k} ({mutate.__name__})"
        run = fuzz.run_case(name, lambda: pau.read(log), names=str(log))
        if run is not None:
            _conserves(run, name)
        _same_lines_either_way(name, log, run)


def _same_lines_either_way(name: str, log, run) -> None:
    """The malformed lines that ``on_invalid="raise"`` refuses are the ones
    ``"quarantine"`` sets aside: the first raises naming the first set aside; a log read
    whole sets nothing aside and gives the same figures."""
    try:
        pau.read(log)
        first = None
    except MLLogError as exc:
        first = exc.line if "malformed :::MLLOG line" in exc.problem else "whole file"
    except PauError:
        first = "whole file"
    kept = fuzz.run_case(name, lambda: pau.read(log, on_invalid="quarantine"), names=str(log))
    if first == "whole file" or kept is None:   # refused in both modes (no run left), or a malformed line
        assert kept is None or first == "whole file", name
        return
    lines = [] if kept.quarantine is None else kept.quarantine["line"].to_pylist()
    assert lines == sorted(lines), name
    if first is None:
        assert not lines and run is not None, name
        assert fuzz.run_case(name, kept.summary) == fuzz.run_case(name, run.summary), name
    else:
        assert lines and lines[0] == first, name
        assert any(w.code == "mllog.malformed_lines" and f"{len(lines)} malformed" in w for w in kept.warnings), name


# --- serving --------------------------------------------------------------------------

AIPERF = shared("serving", "aiperf_gpt-oss-20b_run1", "profile_export.jsonl")
LLMPERF = shared("serving", "llmperf_vllm_yi34b_4xa10g_c16",
                 "01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json")


@pytest.mark.parametrize("sample", [AIPERF, LLMPERF], ids=["aiperf", "llmperf"])
def test_serving(tmp_path, sample):
    """Mutated AIPerf / LLMPerf results: every record is read or set aside with a
    reason; the figures are computed or refused with a PauError."""
    data = sample.read_bytes()
    p = tmp_path / sample.name
    for k in range(fuzz.cases(4 * fuzz.DEFAULT_CASES)):
        rng = random.Random(f"{SEED}-serving-{sample.name}-{k}")
        mutate = rng.choice(fuzz.TEXT_MUTATIONS)
        mutated = mutate(rng, data)
        p.write_bytes(mutated)
        name = f"serving {sample.name} case {k} ({mutate.__name__})"
        run = fuzz.run_case(name, lambda: pau.read(p, on_invalid="quarantine"), names=str(p))
        if run is None:
            continue
        kept = run.requests.num_rows + (run.quarantine.num_rows if run.quarantine is not None else 0)
        if run.metadata.get("tool") == "aiperf":   # one record per non-empty line
            assert kept == sum(1 for line in mutated.split(b"\n") if line.strip(b" \t\r")), name
        fuzz.run_case(name, run.summary)


# --- Parquet (pau's run layout) -------------------------------------------------------

@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A run with events, a lifecycle and spans (the Nsight sample, its for_each ranges as
    steps), written in pau's layout, and its figures."""
    t = read_nsys(NSYS, step_pattern=r"^for_each$")
    run = pau.Run(events=t.events, lifecycle=t.lifecycle, spans=t.spans(), metadata={"format": "nsys"})
    out = tmp_path_factory.mktemp("run") / "run"
    run.write(out)
    return out, pau.read(out).summary()


def test_parquet(tmp_path, written):
    """A mutated file of a written run: with page checksums, either the same figures or
    an error naming the file, never other figures."""
    root, want = written
    files = sorted(p.relative_to(root) for p in root.rglob("*.parquet"))
    assert len(files) == 3   # the events of one rank, the lifecycle, the spans
    for k in range(fuzz.cases()):
        rng = random.Random(f"{SEED}-parquet-{k}")
        case = tmp_path / f"case{k}"
        shutil.copytree(root, case)
        target = case / rng.choice(files)
        mutate = rng.choice(fuzz.BYTE_MUTATIONS + (fuzz.flip_bits,) * 4)
        target.write_bytes(mutate(rng, target.read_bytes()))
        name = f"parquet case {k} ({mutate.__name__} of {target.relative_to(case)})"
        run = fuzz.run_case(name, lambda: pau.read(case), names=target.name)
        if run is not None:
            got = fuzz.run_case(name, run.summary)
            assert got is None or got == want, f"{name}: the figures changed silently"
        shutil.rmtree(case)


def test_the_mutations_are_fixed_by_the_seed():
    data = NSYS.read_bytes()[:10_000]
    once = [m(random.Random(f"{SEED}-{i}"), data) for i, m in enumerate(fuzz.TEXT_MUTATIONS)]
    again = [m(random.Random(f"{SEED}-{i}"), data) for i, m in enumerate(fuzz.TEXT_MUTATIONS)]
    assert once == again and all(x != data for x in once)
    assert np.unique([len(x) for x in once]).size > 1
