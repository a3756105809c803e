"""`pau.views.chrome_trace`: a run's ledger as Chrome trace tracks beside its device events.

The output is loaded back with ``json`` and its tracks summed from the exact integer ns
in ``args``: per rank, the lifecycle state track equals the ledger's time per state, the
idle track its idle, the waits the stragglers' waits; every device event is there once.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pyarrow as pa
import pytest
from depth import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_data import shared

import pau
from pau.figures import stragglers
from pau import cli, errors, synth
from pau.engine.vocab import LIFECYCLE_SCHEMA
from pau.views.chrome_trace import EXACT_OFFSET_NS, IDLE_TRACKS, chrome_trace, write_chrome_trace
from pau.figures.idle import idle_by_cause


def _lifecycle(rows) -> pa.Table:
    return pa.table({f.name: [r.get(f.name) for r in rows] for f in LIFECYCLE_SCHEMA}, schema=LIFECYCLE_SCHEMA)


def _events(rows, names=None) -> pa.Table:
    """``(rank, stream, start_ns, end_ns, kind)`` rows."""
    t = pa.table({"rank": pa.array([r[0] for r in rows], pa.int32()), "stream": pa.array([r[1] for r in rows], pa.int32()),
                  "start_ns": pa.array([r[2] for r in rows], pa.int64()),
                  "end_ns": pa.array([r[3] for r in rows], pa.int64()),
                  "kind": pa.array([r[4] for r in rows], pa.string()).dictionary_encode()})
    return t if names is None else t.append_column("name", pa.array(names, pa.string()))


NAMES = ["gemm", "gemm", '<script>alert("x")</script>', "copy \"quoted\" \\ back", "gemm", "gemm"]


def _small_run() -> pau.Run:
    """Two ranks accountable over [0, 100); steps 1 and 2 (rank 1 is slower); one
    checkpoint of every rank (rank -1) at 90, blocking to 95, durable at 97."""
    lc = _lifecycle([
        dict(record="accountable", rank=0, start_ns=0, end_ns=100),
        dict(record="accountable", rank=1, start_ns=0, end_ns=100),
        dict(record="attempt", attempt=0, rank=-1, start_ns=0, end_ns=100, kind="completed"),
        dict(record="step", attempt=0, rank=0, step=1, start_ns=10, end_ns=40),
        dict(record="step", attempt=0, rank=1, step=1, start_ns=10, end_ns=50),
        dict(record="step", attempt=0, rank=0, step=2, start_ns=50, end_ns=80),
        dict(record="step", attempt=0, rank=1, step=2, start_ns=50, end_ns=90),
        dict(record="checkpoint_save", attempt=0, rank=-1, step=2, start_ns=90, block_end_ns=95, durable_ns=97,
             ok=True),
    ])
    ev = _events([(0, 1, 10, 30, "compute"), (0, 1, 50, 70, "compute"), (0, 1, 60, 75, "compute"),
                  (0, 2, 20, 35, "memcpy"), (1, 1, 10, 45, "compute"), (1, 1, 50, 85, "compute")], NAMES)
    return pau.Run(events=ev, lifecycle=lc)


def _load(path) -> dict:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def _tracks(doc: dict) -> dict:
    """rank -> {track name -> list of (name, cat, start_ns, end_ns, event)} from a loaded trace."""
    rank_of = {int(k): v for k, v in doc["otherData"]["pau"]["ranks"].items()}
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    out: dict = defaultdict(lambda: defaultdict(list))
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            out[rank_of[e["pid"]]][names[(e["pid"], e["tid"])]].append(
                (e["name"], e["cat"], e["args"]["start_ns"], e["args"]["end_ns"], e))
        elif e["ph"] == "i":
            out[rank_of[e["pid"]]][names[(e["pid"], e["tid"])]].append((e["name"], e["cat"], e["args"]["time_ns"],
                                                                        None, e))
    return out


def _state_sums(tracks: dict) -> dict:
    out: dict = defaultdict(int)
    for r, ts in tracks.items():
        for name, _, s, e, _ in ts.get("lifecycle state", []):
            out[(r, name)] += e - s
    return dict(out)


def _idle_sums(tracks: dict) -> dict:
    out: dict = defaultdict(int)
    for r, ts in tracks.items():
        for events in ts.values():
            for _, cat, s, e, _ in events:
                if cat == "idle":
                    out[r] += e - s
    return dict(out)


def _ledger_sums(led) -> tuple[dict, dict]:
    state: dict = defaultdict(int)
    idle: dict = defaultdict(int)
    for row in led.table.to_pylist():
        state[(row["rank"], row["state"])] += row["duration_ns"]
        if row["activity"] == "idle":
            idle[row["rank"]] += row["duration_ns"]
    return dict(state), dict(idle)


def _device_count(tracks: dict) -> int:
    return sum(len(v) for ts in tracks.values() for k, v in ts.items() if k.startswith(("stream ", "kind ")))


def _check_times(doc: dict) -> None:
    """ts and dur give back the exact ns (offsets below 2**51 ns from the origin)."""
    origin = doc["otherData"]["pau"]["origin_ns"]
    assert doc["otherData"]["pau"]["exact_ts"] is True
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            assert round(e["ts"] * 1000) == e["args"]["start_ns"] - origin
            assert round(e["dur"] * 1000) == e["args"]["end_ns"] - e["args"]["start_ns"]
        elif e["ph"] == "i":
            assert round(e["ts"] * 1000) == e["args"]["time_ns"] - origin


def _no_overlap_within_a_track(doc: dict) -> None:
    per: dict = defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            per[(e["pid"], e["tid"])].append((e["args"]["start_ns"], e["args"]["end_ns"]))
    for spans in per.values():
        spans.sort()
        assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:]))


def test_hand_worked_run(tmp_path):
    run = _small_run()
    path = write_chrome_trace(run, tmp_path / "t.json")
    doc = _load(path)
    assert doc["displayTimeUnit"] == "ns" and doc["otherData"]["pau"]["origin_ns"] == 0
    tr = _tracks(doc)
    assert _state_sums(tr) == {(0, "productive"): 60, (0, "checkpoint"): 5, (0, "unattributed"): 35,
                               (1, "productive"): 80, (1, "checkpoint"): 5, (1, "unattributed"): 15}
    assert _state_sums(tr) == _ledger_sums(run.ledger())[0]
    # idle: accountable time outside every event, maximal pieces
    assert [(s, e) for _, _, s, e, _ in tr[0]["idle"]] == [(0, 10), (35, 50), (75, 100)]
    assert [(s, e) for _, _, s, e, _ in tr[1]["idle"]] == [(0, 10), (45, 50), (85, 100)]
    assert _idle_sums(tr) == {0: 50, 1: 30} == _ledger_sums(run.ledger())[1]
    # rank 0 waits for rank 1 at the end of both steps; rank 1 waits for nobody
    assert [(n, s, e, x["args"]["step"]) for n, _, s, e, x in tr[0]["waiting for the slowest rank"]] == [
        ("wait for rank 1", 40, 50, 1), ("wait for rank 1", 80, 90, 2)]
    assert "waiting for the slowest rank" not in tr[1]
    # the checkpoint of every rank is on each rank's lifecycle events, saved and durable
    for r in (0, 1):
        assert [(n, at) for n, _, at, _, _ in tr[r]["lifecycle events"]] == [("checkpoint step 2", 90),
                                                                            ("checkpoint step 2 durable", 97)]
        assert tr[r]["lifecycle events"][0][4]["args"]["rank"] == -1
    # device events: once each, by stream; the overlapping one on its own lane
    assert _device_count(tr) == run.events.num_rows == 6
    assert [(n, s, e) for n, _, s, e, _ in tr[0]["stream 1"]] == [("gemm", 10, 30), ("gemm", 50, 70)]
    assert [(n, s, e) for n, _, s, e, _ in tr[0]["stream 1 (overlap 1)"]] == [(NAMES[2], 60, 75)]
    assert [n for n, *_ in tr[0]["stream 2"]] == [NAMES[3]]
    _check_times(doc)
    _no_overlap_within_a_track(doc)


def test_names_survive_as_text(tmp_path):
    path = write_chrome_trace(_small_run(), tmp_path / "t.json.gz")
    doc = _load(path)
    names = [e["name"] for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] in ("compute", "memcpy")]
    assert '<script>alert("x")</script>' in names and 'copy "quoted" \\ back' in names
    assert sorted(names) == sorted(NAMES)


def test_kineto_sample_sums_equal_the_ledger():
    run = pau.read(shared("kineto", "hta-trace_filter"))
    doc = json.loads(json.dumps(chrome_trace(run)))
    tr = _tracks(doc)
    state, idle = _ledger_sums(run.ledger())
    assert _state_sums(tr) == state and _idle_sums(tr) == idle
    assert _device_count(tr) == run.events.num_rows
    st_ = stragglers.stragglers(run.lifecycle)
    waits = {r: sum(e - s for _, _, s, e, _ in tr[r].get("waiting for the slowest rank", [])) for r in tr}
    assert waits == {r["rank"]: r["wait_ns"] for r in st_.ranks.to_pylist()}
    assert waits[0] == 9_280_000  # rank 0 waited 9.28 ms for rank 1 (the report's straggler figure)
    _check_times(doc)
    _no_overlap_within_a_track(doc)


def test_synthetic_run_with_failures():
    job = synth.training_job(ranks=4, steps=100, seed=0, mtbf_s=50.0, checkpoint_every=20, kernels_per_step=8,
                             straggler=(3, 1.25))
    run = pau.Run(events=job.events, lifecycle=job.lifecycle)
    doc = json.loads(json.dumps(chrome_trace(run)))
    tr = _tracks(doc)
    state, idle = _ledger_sums(run.ledger())
    assert _state_sums(tr) == state and _idle_sums(tr) == idle
    assert any(st_ == "rolled_back" for _, st_ in state)
    assert _device_count(tr) == run.events.num_rows
    lc = job.lifecycle.to_pylist()
    for record, cat in (("failure", "failure"), ("restore", "restore")):
        rows = [x for x in lc if x["record"] == record]
        want = sum(4 if x["rank"] == -1 else 1 for x in rows)
        got = sum(1 for ts in tr.values() for n, c, *_ in ts.get("lifecycle events", []) if c == cat)
        assert rows and got == want
    fail = next(x for x in lc if x["record"] == "failure")
    assert (f"failure: {fail['kind']}", fail["start_ns"]) in [
        (n, at) for n, _, at, _, _ in tr[fail["rank"]]["lifecycle events"]]
    _check_times(doc)


def test_a_lifecycle_only_run_has_states_and_no_idle():
    job = synth.training_job(ranks=2, steps=30, seed=2, mtbf_s=60.0, checkpoint_every=10)
    run = pau.Run(lifecycle=job.lifecycle)
    tr = _tracks(chrome_trace(run))
    assert _state_sums(tr) == _ledger_sums(run.ledger())[0]
    assert _idle_sums(tr) == {} and _device_count(tr) == 0


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 2), st.integers(-5, 40), st.integers(0, 12),
                          st.sampled_from(["compute", "memcpy"])), max_size=12),
       st.integers(-8, 10), st.integers(0, 50))
def test_idle_is_every_uncovered_ns_of_the_span(rows, lo, width):
    """Events-only runs over a span per rank: the idle track holds exactly the ns of
    the span that no event covers (checked ns by ns), in maximal pieces, and no two
    events of one track overlap."""
    ev = _events([(r, s_, t, t + d, k) for r, s_, t, d, k in rows]) if rows else _events([(0, 0, lo, lo, "compute")])
    spans = pa.table({"rank": pa.array([0, 1], pa.int32()), "start_ns": pa.array([lo, lo], pa.int64()),
                      "end_ns": pa.array([lo + width] * 2, pa.int64())})
    run = pau.Run(events=ev, spans=spans)
    doc = chrome_trace(run)
    tr = _tracks(doc)
    evs = ev.to_pylist()
    for r in (0, 1):
        want = {t for t in range(lo, lo + width)
                if not any(e["rank"] == r and e["start_ns"] <= t < e["end_ns"] for e in evs)}
        pieces = [(s, e) for _, _, s, e, _ in tr.get(r, {}).get("idle", [])]
        assert {t for s, e in pieces for t in range(s, e)} == want
        assert all(b[0] > a[1] for a, b in zip(pieces, pieces[1:]))  # maximal: never touching
    assert _device_count(tr) == ev.num_rows
    assert _idle_sums(tr) == {k: v for k, v in _ledger_sums(run.ledger())[1].items() if v}
    _no_overlap_within_a_track(doc)


def test_times_beyond_exact_float_us_are_flagged_and_args_stay_exact():
    big = EXACT_OFFSET_NS + 3
    run = pau.Run(events=_events([(0, 1, 0, 10, "compute"), (0, 1, big, big + 7, "compute")]))
    doc = chrome_trace(run)
    assert doc["otherData"]["pau"]["exact_ts"] is False
    last = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "compute"][-1]
    assert (last["args"]["start_ns"], last["args"]["end_ns"]) == (big, big + 7)
    assert _idle_sums(_tracks(doc)) == {0: big - 10}


def test_a_ledger_of_another_run_is_refused():
    other = pau.Run(events=_events([(0, 1, 0, 5, "compute"), (1, 1, 0, 5, "compute")]))
    with pytest.raises(errors.PauError, match="accountable time"):
        chrome_trace(_small_run(), other.ledger())
    with pytest.raises(errors.PauError, match="neither events nor a lifecycle"):
        chrome_trace(pau.Run())


def test_cli_writes_it(tmp_path, capsys):
    src = shared("kineto", "hta-trace_filter")
    out = tmp_path / "trace.json"
    assert cli.main(["convert", str(src), str(out), "--to", "chrome-trace"]) == 0
    assert "Chrome trace" in capsys.readouterr().out
    doc = _load(out)
    assert doc == json.loads(json.dumps(chrome_trace(pau.read(src))))
    # an existing file is kept unless --overwrite; a folder is refused before any reading
    assert cli.main(["convert", str(src), str(out), "--to", "chrome-trace"]) == cli.EXIT_BAD_INPUT
    assert "exists" in capsys.readouterr().err
    assert cli.main(["convert", str(src), str(out), "--to", "chrome-trace", "--overwrite"]) == 0
    assert cli.main(["convert", str(src), str(tmp_path), "--to", "chrome-trace"]) == cli.EXIT_USAGE
    gz = tmp_path / "trace.json.gz"
    assert cli.main(["convert", str(src), str(gz), "--to", "chrome-trace"]) == 0
    assert _load(gz) == doc


def _cause_sums(tracks: dict) -> dict:
    """{(rank, cause): ns} of the idle-by-cause tracks (from args.cause)."""
    out: dict = defaultdict(int)
    for r, ts in tracks.items():
        for name, events in ts.items():
            for _, cat, s, e, x in events:
                if cat == "idle" and name != "idle":
                    assert name == IDLE_TRACKS[x["args"]["cause"]] == x["name"]
                    out[(r, x["args"]["cause"])] += e - s
    return dict(out)


def test_hand_worked_idle_by_cause():
    """_small_run with launches and a host data wait: rank 0's event at 10 was launched
    at 4 and the one at 50 at 40; rank 1 waited for data over [80, 95)."""
    run = _small_run()
    ev = run.events.append_column("launch_ns", pa.array([4, 40, None, None, None, None], pa.int64()))
    host = pa.table({"rank": pa.array([1], pa.int32()), "start_ns": pa.array([80], pa.int64()),
                     "end_ns": pa.array([95], pa.int64()),
                     "cause": pa.array(["data_wait"]).dictionary_encode().cast(pa.dictionary(pa.int8(), pa.string()))})
    run = pau.Run(events=ev, lifecycle=run.lifecycle, host=host)
    doc = json.loads(json.dumps(chrome_trace(run)))
    tr = _tracks(doc)
    assert "idle" not in tr[0] and "idle" not in tr[1]  # split: no undivided idle track
    # rank 0 idle [0,10) [35,50) [75,100): host waits up to each launch, the rest other
    assert [(s, e) for _, _, s, e, _ in tr[0]["idle: host_wait"]] == [(0, 4), (35, 40)]
    assert [(s, e) for _, _, s, e, _ in tr[0]["idle: other"]] == [(4, 10), (40, 50), (75, 100)]
    # rank 1 idle [0,10) [45,50) [85,100): data wait from 85 (busy before) to 95
    assert [(s, e) for _, _, s, e, _ in tr[1]["idle: data_wait"]] == [(85, 95)]
    assert [(s, e) for _, _, s, e, _ in tr[1]["idle: other"]] == [(0, 10), (45, 50), (95, 100)]
    assert _cause_sums(tr) == {(0, "host_wait"): 9, (0, "idle.other"): 41, (1, "data_wait"): 10,
                               (1, "idle.other"): 20}
    assert _idle_sums(tr) == {0: 50, 1: 30} == _ledger_sums(run.ledger())[1]
    _no_overlap_within_a_track(doc)
    _check_times(doc)


def test_resnet_sample_idle_by_cause_sums_to_the_ledger():
    run = pau.read(shared("kineto", "pytorch-kineto", "resnet50_num_workers_0"))
    doc = json.loads(json.dumps(chrome_trace(run)))
    tr = _tracks(doc)
    led = run.ledger()
    assert _idle_sums(tr) == _ledger_sums(led)[1]
    if led.intervals is not None:
        res = idle_by_cause(run.events, run.host, lifecycle=run.lifecycle, ledger=led)
    else:
        res = idle_by_cause(run.events, run.host, span=run.spans)
    want = {(r["rank"], r["cause"]): r["duration_ns"] for r in res.table.to_pylist() if r["duration_ns"]}
    assert _cause_sums(tr) == want
    assert {c for _, c in want} >= {"data_wait", "host_wait"}
    _no_overlap_within_a_track(doc)
