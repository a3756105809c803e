"""Fleet rollups (``docs/fleet.md``, "Rollups"): each figure against an independent pandas
computation from the runs, cells and jobs tables, and the periods of every group summing
exactly to its total over random periods and cuts (Hypothesis)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pau
import pau.core
import pau.fleet.groups as fleet_groups
import pau.fleet.periods as fleet_periods
import pau.fleet.sums as fleet_sums
from pau import synth
from pau.engine.vocab import STATES
from pau.errors import PauError
from pau.readers import JOBS_SCHEMA

H = 3_600 * 10**9
T0 = synth.DEFAULT_START_NS - synth.DEFAULT_START_NS % H  # 2023-11-14 22:00 UTC, a Tuesday
JOBS_WITH_RUN = JOBS_SCHEMA.append(pa.field("run", pa.string()))
STATE_COL = {s: s.replace(".", "_") + "_ns" for s in STATES}


def _write_runs(root, n: int, first: int, spread_h: int) -> None:
    for i in range(n):
        job = synth.training_job(ranks=2, steps=30, seed=first + i, mtbf_s=2400, checkpoint_every=5,
                                 step_time_s=600, kernels_per_step=3, buckets=1, events=False,
                                 start_ns=synth.DEFAULT_START_NS + (first + i) * spread_h * H + 17 * 10**9)
        pau.Run(lifecycle=job.lifecycle, metadata={"format": "pau", "job": f"job-{first + i}"}).write(
            root / f"run{first + i:03d}")


def _jobs_table(runs: pa.Table, *, extra: bool = True) -> pa.Table:
    """Jobs for some of the runs (allocation from an hour before to an hour after the run, 2
    accelerators), jobs with no run (one crossing several weeks), one still running."""
    rows = []
    for k, (run, job, cluster, start, end) in enumerate(zip(*(runs[c].to_pylist() for c in (
            "run", "job", "cluster", "start_ns", "end_ns")))):
        if k % 3 == 2:
            continue  # a run with no job stands on its own
        s, e = start - H - 7 * 10**9, end + H
        rows.append({"job": job, "cluster": cluster, "scheduler": "slurm", "team": "ignored", "start_ns": s, "end_ns": e,
                         "submit_ns": s - 600 * 10**9 * (k + 1), "queue_ns": 600 * 10**9 * (k + 1), "accelerators": 2.0,
                         "accelerator_type": "H100", "allocated_accelerator_ns": 2 * (e - s), "run": run})
    if extra:
        s = T0 + 30 * H + 123
        e = s + 20 * 24 * H + 5
        rows.append({"job": "idle-1", "cluster": "east", "scheduler": "slurm", "team": "llm", "start_ns": s, "end_ns": e,
                         "submit_ns": s - 10**12, "queue_ns": 10**12, "accelerators": 8.0, "accelerator_type": "H100",
                         "allocated_accelerator_ns": 8 * (e - s), "run": None})
        rows.append({"job": "idle-2", "cluster": "west", "scheduler": "slurm", "team": "vision", "start_ns": T0 + 5 * H,
                         "end_ns": T0 + 9 * H, "submit_ns": T0, "queue_ns": 5 * H, "accelerators": 1.0,
                         "accelerator_type": "A100", "allocated_accelerator_ns": 4 * H, "run": None})
        rows.append({"job": "running", "cluster": "west", "scheduler": "slurm", "team": "vision", "start_ns": T0 + 50 * H,
                         "end_ns": None, "submit_ns": T0, "queue_ns": 50 * H, "accelerators": 4.0, "accelerator_type": "A100",
                         "allocated_accelerator_ns": None, "run": None})
    cols = {f.name: [r.get(f.name) for r in rows] for f in JOBS_WITH_RUN}
    return pa.table(cols, schema=JOBS_WITH_RUN)


def build_fleet(root):
    """Seven runs of two clusters, ingested, and a jobs table written beside them."""
    (root / "a").mkdir()
    (root / "b").mkdir()
    _write_runs(root / "a", 4, 0, 29)
    _write_runs(root / "b", 3, 10, 41)
    out = root / "fleet"
    pau.core.ingest([root / "a"], out, workers=1, labels={"cluster": "east", "team": "llm",
                                                          "accelerator_type": "H100", "campaign": "q4"})
    pau.core.ingest([root / "b"], out, workers=1, labels={"cluster": "west", "team": "vision",
                                                          "accelerator_type": "A100", "campaign": "q1"})
    f = pau.read_fleet(out)
    (out / "jobs").mkdir(exist_ok=True)
    pq.write_table(_jobs_table(f.runs), out / "jobs" / "jobs.parquet")
    return f


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    return build_fleet(tmp_path_factory.mktemp("rollup"))


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """The same runs, no jobs table."""
    root = tmp_path_factory.mktemp("bare")
    _write_runs(root, 3, 0, 29)
    pau.core.ingest([root], root / "fleet", workers=1, labels={"cluster": "east", "team": "llm"})
    return pau.read_fleet(root / "fleet")


# ---------------------------------------------------------------------------
# the independent computation


def _period(t: pd.Series, every: str, tz: str | None = None) -> pd.Series:
    if tz is not None:  # local midnights, by pandas' own calendar, back in UTC
        local = pd.to_datetime(t, unit="ns", utc=True).dt.tz_convert(tz).dt.normalize()
        if every == "1w":
            local = local - pd.to_timedelta(local.dt.day_of_week, unit="D")
        elif every == "1mo":
            local = local - pd.to_timedelta(local.dt.day - 1, unit="D")
        local = pd.DatetimeIndex(local).tz_localize(None).tz_localize(tz)  # midnight again after a DST change
        return pd.Series(local.tz_convert("UTC").tz_localize(None).astype("datetime64[ns]").astype("int64"))
    ts = pd.to_datetime(t, unit="ns")
    if every == "1w":
        return ts.dt.to_period("W-SUN").dt.start_time.astype("datetime64[ns]").astype("int64")
    if every == "1mo":
        return ts.dt.to_period("M").dt.start_time.astype("datetime64[ns]").astype("int64")
    return ts.dt.floor({"1d": "D", "1h": "h"}[every]).astype("datetime64[ns]").astype("int64")


def _boundaries(s: int, e: int, every: str, tz: str | None = None) -> list[int]:
    freq = {"1w": "W-MON", "1mo": "MS", "1d": "D", "1h": "h"}[every]
    first = pd.to_datetime(s, unit="ns")
    # ranges count from the time of day given: start from the hour (days, weeks, months: midnight)
    if tz is not None:
        first = first.tz_localize("UTC").tz_convert(tz).normalize()
        inside = pd.date_range(first, pd.to_datetime(e, unit="ns").tz_localize("UTC").tz_convert(tz), freq=freq)
        inside = inside.tz_convert("UTC").tz_localize(None)
    else:
        first = first.floor("h") if every == "1h" else first.normalize()
        inside = pd.date_range(first, pd.to_datetime(e, unit="ns"), freq=freq)
    return sorted({s, e, *(int(x.value) for x in inside if s < x.value < e)})


def _expected(f, by: list[str], every: str, since=None, until=None, tz=None) -> pd.DataFrame:
    """allocated, accountable and each state per group and period, with pandas."""
    runs = f.runs.select(["run", "job", "cluster", "team", "accelerator_type", "end_ns", "start_ns", "failures",
                          "labels"]).to_pandas()
    for k in by:  # labels.K: the runs table's column K where it has one, else the labels' K
        if k.startswith("labels."):
            sub = k[len("labels."):]
            runs[k] = (f.runs[sub].to_pylist() if sub in f.runs.column_names
                       else [dict(x or ()).get(sub) for x in runs["labels"]])
    cells = f.cells.to_pandas()
    lo = -(2**62) if since is None else since
    hi = 2**62 if until is None else until
    cells = cells[(cells.hour_ns >= lo) & (cells.hour_ns < hi)]
    jobs = f.jobs.to_pylist() if f.jobs is not None else []  # Python ints: ns beyond float64's 2**53
    with_job = {j["run"] for j in jobs if j["run"] is not None}
    c = cells.merge(runs[["run", *by]], on="run")
    c["period"] = _period(c.hour_ns, every, tz).to_numpy()
    parts = []
    for state in STATES:
        x = c[c.state == state].groupby(by + ["period"], dropna=False).duration_ns.sum().rename(STATE_COL[state])
        parts.append(x)
    alone = c[~c.run.isin(with_job)].groupby(by + ["period"], dropna=False).duration_ns.sum().rename("alloc_runs")
    pieces = []
    keys_of = runs.set_index("run")[by]
    for j in jobs:
        s0, e0, a = j["start_ns"], j["end_ns"], j["allocated_accelerator_ns"]
        if e0 is None or s0 is None or a is None or a <= 0 or e0 <= s0:
            continue
        s, e = max(s0, lo), min(e0, hi)
        if e <= s:
            continue
        if j["run"] is not None:
            keys = keys_of.loc[j["run"]].tolist()
        else:
            keys = [j[k] if k in ("cluster", "team", "accelerator_type") else None for k in by]
        b = _boundaries(s, e, every, tz)
        for x, y in zip(b[:-1], b[1:]):  # the allocation up to t: a * (t - start) // (end - start), Python ints
            piece = a * (y - s0) // (e0 - s0) - a * (x - s0) // (e0 - s0)
            pieces.append([*keys, int(_period(pd.Series([x]), every, tz)[0]), piece, j["run"] is None])
    jp = pd.DataFrame(pieces, columns=by + ["period", "alloc", "alone"]).astype({"alloc": object})
    alloc_jobs = jp.groupby(by + ["period"], dropna=False).alloc.sum().rename("alloc_jobs")
    unatt_jobs = jp[jp.alone.astype(bool)].groupby(by + ["period"], dropna=False).alloc.sum().rename("unatt_jobs")
    # Python integers throughout (object columns): a float64 step on the way (NaN where a
    # part has no row) would round sums past 2**53 ns
    out = pd.concat([x.astype(object) for x in (*parts, alone, alloc_jobs, unatt_jobs)], axis=1)
    out = out.astype(object).where(out.notna(), 0).astype("int64")
    out[STATE_COL["unattributed"]] += out["unatt_jobs"]
    out["allocated_ns"] = out["alloc_runs"] + out["alloc_jobs"]
    out["accountable_ns"] = out[[STATE_COL[s] for s in STATES]].sum(axis=1)
    return out.drop(columns=["alloc_runs", "alloc_jobs", "unatt_jobs"])


def _got(r) -> pd.DataFrame:
    t = r.table.to_pandas()
    t["period"] = t["period_start_ns"]
    if r.since is not None:  # the first period's start is the cut: its period's start in the index
        t["period"] = pau.fleet.rollup.period_starts(t["period_start_ns"].to_numpy(), r.every)
    return t.set_index(r.by + ["period"])


@pytest.mark.parametrize("every", ["1h", "1d", "1w", "1mo"])
@pytest.mark.parametrize("by", [["cluster", "team"], ["labels.campaign"], []])
def test_rollup_equals_pandas(fleet, every, by):
    assert_rollup_equals_pandas(fleet, by, every)


def assert_rollup_equals_pandas(fleet, by: list[str], every: str) -> None:
    """``fleet.rollup(by, every)``'s time columns against :func:`_expected`, and its
    ratios against its own sums."""
    r = fleet.rollup(by=by, every=every)
    runs_by = by or ["cluster"]
    exp = _expected(fleet, runs_by, every)
    if not by:
        exp = exp.groupby(level="period").sum()
    got = _got(r)
    if by:  # a job with no run has no labels: its group's key is null
        got, exp = (x.reset_index().astype({k: object for k in by}).fillna({k: "-" for k in by})
                    .set_index(by + ["period"]) for x in (got, exp))
    cols = ["allocated_ns", "accountable_ns", *STATE_COL.values()]
    exp = exp[cols].sort_index()
    got = got[cols].sort_index()
    got = got[(got != 0).any(axis=1)]
    exp = exp[(exp != 0).any(axis=1)]
    pd.testing.assert_frame_equal(got.astype("int64"), exp.astype("int64"), check_names=False)
    # ratios are ratios of the sums, never means of the runs' ratios
    t = r.table.to_pandas()
    ok = t.accountable_ns > 0
    assert np.allclose(t.goodput[ok], t.productive_ns[ok] / t.accountable_ns[ok])
    assert (t.badput_ns == t.accountable_ns - t.productive_ns).all()
    assert np.allclose(t.allocated_h, t.allocated_ns / H)


def _failures(f) -> pd.DataFrame:
    """One row per failure, with pandas: its run's cluster, its instant and its time to
    recover (NaN when not recovered; recovery_ns[i] is that of failure_ns[i])."""
    runs = f.runs.select(["run", "cluster", "failure_ns", "recovery_ns"]).to_pandas()
    rows = []
    for cluster, fs, rs in zip(runs.cluster, runs.failure_ns, runs.recovery_ns):
        fs = [] if fs is None else list(fs)
        rs = [] if rs is None else list(rs)
        rows += [(cluster, int(t), float(rs[i]) if i < len(rs) else np.nan) for i, t in enumerate(fs)]
    return pd.DataFrame(rows, columns=["cluster", "failure_ns", "recovery_ns"])


@pytest.mark.parametrize("every", ["1h", "1d", "1mo"])
def test_counts_are_where_they_happened_and_queue_where_the_job_started(fleet, every):
    r = fleet.rollup(by=["cluster"], every=every)
    runs = fleet.runs.to_pandas()
    # counts a run carries as a whole: at its last ns
    runs["period"] = _period(np.maximum(runs.end_ns - 1, runs.start_ns), every)
    exp = runs.groupby(["cluster", "period"])[["preserved_steps"]].sum()
    got = _got(r)[["preserved_steps"]]
    got = got[got.index.isin(exp.index)]
    pd.testing.assert_frame_equal(got.sort_index(), exp.sort_index(), check_names=False)
    # failures, and those not recovered: each in the period of its instant
    fl = _failures(fleet)
    assert len(fl) == runs.failures.sum() > 0 and fl.recovery_ns.isna().sum() == runs.not_recovered.sum()
    fl["period"] = _period(fl.failure_ns, every)
    fl["lost"] = fl.recovery_ns.isna().astype("int64")
    exp = fl.groupby(["cluster", "period"]).agg(failures=("failure_ns", "count"), not_recovered=("lost", "sum"))
    got = _got(r)[["failures", "not_recovered"]]
    got = got[got.failures > 0]
    pd.testing.assert_frame_equal(got.sort_index().astype("int64"), exp.sort_index().astype("int64"),
                                  check_names=False)
    if every == "1h":  # hours: a run's failures are not all in the hour of its end
        last = _period(np.maximum(runs.end_ns - 1, runs.start_ns), every)
        assert not set(zip(fl.cluster, fl.period)) <= set(zip(runs.cluster, last))
    assert r.table["failures"].to_numpy().sum() == runs.failures.sum()
    jobs = fleet.jobs.to_pandas()
    jobs = jobs[jobs.start_ns.notna()]
    runs_i = runs.set_index("run")
    jobs["cluster"] = [runs_i.loc[x, "cluster"] if isinstance(x, str) else c for x, c in zip(jobs.run, jobs.cluster)]
    jobs["period"] = _period(jobs.start_ns.astype("int64"), every)
    q = jobs.groupby(["cluster", "period"]).agg(queue_ns=("queue_ns", "sum"), jobs_started=("job", "count"))
    g = _got(r)
    g = g[g.jobs_started > 0][["queue_ns", "jobs_started"]]
    pd.testing.assert_frame_equal(g.sort_index().astype("int64"), q.sort_index().astype("int64"), check_names=False)
    # MTBF and failure rate per accelerator-hour are ratios of the sums
    t = r.table.to_pandas()
    f = t.failures > 0
    assert np.allclose(t.mtbf_accelerator_h[f], t.accountable_ns[f] / H / t.failures[f])


@pytest.mark.parametrize("every", ["1d", "1mo"])
def test_time_to_recover_is_quantiles_of_pooled_recoveries(fleet, every):
    r = fleet.rollup(by=["cluster"], every=every)
    fl = _failures(fleet).dropna()
    fl["period"] = _period(fl.failure_ns, every)
    exp = fl.groupby(["cluster", "period"]).recovery_ns.agg(
        recoveries="count", mean="mean", p50=lambda x: x.quantile(0.5), p90=lambda x: x.quantile(0.9),
        max="max") / pd.Series({"recoveries": 1, "mean": 1e9, "p50": 1e9, "p90": 1e9, "max": 1e9})
    got = _got(r)
    got = got[got.recoveries > 0]
    got = got[["recoveries", "time_to_recover_mean_s", "time_to_recover_p50_s", "time_to_recover_p90_s",
               "time_to_recover_max_s"]].set_axis(list(exp.columns), axis=1)
    assert len(got) == len(exp) > 0 and (exp.recoveries > 1).any()  # pooled: several recoveries in a row
    pd.testing.assert_frame_equal(got.sort_index().astype("float64"), exp.sort_index().astype("float64"),
                                  check_names=False, rtol=1e-12)
    t = r.table.to_pandas()
    assert (t.recoveries + t.not_recovered == t.failures).all()


def test_failure_lists_are_the_runs_recovery_figure(fleet):
    runs = fleet.runs.to_pylist()
    assert sum(len(x["failure_ns"]) for x in runs) > 0
    for row in runs:
        rec = fleet.run(row["run"]).summary()["recovery"]
        fs, ds = row["failure_ns"], row["recovery_ns"]
        assert len(fs) == rec["failures"] == row["failures"]
        assert len(fs) - len(ds) == rec["not_recovered"] == row["not_recovered"]
        assert None not in ds and all(d >= 0 for d in ds)
        assert sorted(fs) == [t for t, _ in rec["per_failure_ns"]]
        assert (sum(ds) / len(ds) / 1e9 if ds else None) == pytest.approx(rec["mean_to_progress_s"])
        # recovery_ns[i] is the time to recover of failure_ns[i]
        assert sorted(zip(fs, ds)) == sorted((t, d) for t, d in rec["per_failure_ns"] if d is not None)


def test_failure_lists_that_disagree_with_the_counts_are_refused(fleet):
    from pau.fleet.rollup import rollup

    runs = fleet.runs
    i = next(k for k, x in enumerate(runs["failure_ns"].to_pylist()) if x)
    fs = runs["failure_ns"].to_pylist()
    fs[i] = fs[i][1:]
    bad = runs.set_column(runs.schema.get_field_index("failure_ns"), "failure_ns",
                          pa.array(fs, pa.list_(pa.int64())))
    with pytest.raises(PauError, match=rf"row {i} .*failure_ns"):
        rollup(bad, fleet.cells, every="1d")


EVERY = st.sampled_from(["1h", "3h", "1d", "2d", "1w", "1mo", "2mo"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(every=EVERY, cut=st.tuples(st.integers(-48, 600), st.integers(1, 800)), use_cut=st.booleans(),
       tz=st.sampled_from([None, "America/New_York", "Europe/Paris", "Pacific/Auckland"]))
def test_periods_sum_exactly_to_the_total(fleet, every, cut, use_cut, tz):
    since = T0 + cut[0] * H if use_cut else None
    until = since + cut[1] * H if use_cut else None
    tz = None if every.endswith("h") else tz  # local periods are days, weeks and months
    r = fleet.rollup(by=["cluster", "team"], every=every, since=since, until=until, tz=tz)
    totals = {g: v for g, v in zip(zip(r.totals()["cluster"].to_pylist(), r.totals()["team"].to_pylist()),
                                   r.totals().to_pylist())}
    # the total without periods, straight from the tables
    exp = _expected(fleet, ["cluster", "team"], "1mo", since, until).groupby(level=[0, 1]).sum()
    for (cluster, team), row in exp.iterrows():
        if not (row != 0).any():
            continue
        got = totals[(cluster, team)]
        assert got["allocated_ns"] == row["allocated_ns"]
        assert got["accountable_ns"] == row["accountable_ns"]
        for s in STATES:
            assert got[STATE_COL[s]] == row[STATE_COL[s]]
    t = r.table.to_pandas()
    if len(t):
        assert (t.period_end_ns > t.period_start_ns).all()
        if use_cut:
            assert t.period_start_ns.min() >= since and t.period_end_ns.max() <= until


def test_no_jobs_table_allocated_is_accountable_and_said(bare):
    r = bare.rollup(by="cluster", every="1d")
    assert r.allocated_from == "runs"
    assert "no jobs table" in r.warnings[0]
    assert r.table["allocated_ns"].equals(r.table["accountable_ns"])
    assert r.table["queue_ns"].null_count == r.table.num_rows


def test_jobs_without_allocation_are_said(fleet):
    r = fleet.rollup(every="1w")
    assert any("running" in w for w in r.warnings)


def test_where_and_labels(fleet):
    a = fleet.rollup(by=["labels.team"], every="1w", where="cluster=east")
    assert set(a.table["labels.team"].to_pylist()) == {"llm"}
    b = fleet.rollup(by=["team"], every="1w", where={"team": ["llm"]})
    assert a.table["allocated_ns"].equals(b.table["allocated_ns"])
    c = fleet.rollup(by=["team"], every="1w", where="team!=llm")
    assert set(c.table["team"].to_pylist()) == {"vision"}
    # a job with no run is kept by its own columns: west's idle job is in cluster=west
    west = fleet.rollup(by=["cluster"], every="1w", where="cluster=west")
    every = fleet.rollup(by=["cluster"], every="1w")
    mask = pa.compute.equal(every.table["cluster"], "west")
    assert west.table["allocated_ns"].equals(every.table.filter(mask)["allocated_ns"])
    assert sum(west.table["unattributed_ns"].to_pylist()) >= 4 * H  # idle-2: 4 accelerator-hours


def test_cost_model(fleet):
    model = {"accelerator": {"H100": {"contract_rate_per_accelerator_hour": 2.0},
                             "A100": {"contract_rate_per_accelerator_hour": 1.0}}}
    r = fleet.rollup(by=["accelerator_type"], every="1w", cost_model=model)
    t = r.table.to_pandas()
    rate = t.accelerator_type.map({"H100": 2.0, "A100": 1.0})
    assert np.allclose(t.cost, rate * t.allocated_ns / H)
    parts = t[["cost_productive", "cost_rolled_back", "cost_recovery", "cost_idle", "cost_overhead",
               "cost_unaccounted"]].sum(axis=1)
    assert np.allclose(parts, t.cost)
    assert set(r.cost_basis) == {"H100 / east", "A100 / west"}
    assert r.currency == "USD"


def test_iso_weeks_start_on_monday():
    starts = pau.fleet.rollup.period_starts(np.array([T0, T0 + 5 * 24 * H]), "1w")
    for s in starts.tolist():
        d = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=s // 1000)
        assert d.weekday() == 0 and d.hour == 0 and d.minute == 0


def test_bad_arguments(fleet):
    with pytest.raises(PauError, match="not a period"):
        fleet.rollup(every="fortnight")
    with pytest.raises(PauError, match="whole hour"):
        fleet.rollup(since=T0 + 1)
    with pytest.raises(PauError, match="labels.NAME"):
        fleet.rollup(by=["nope"])
    with pytest.raises(PauError, match="KEY=VALUE"):
        fleet.rollup(where="cluster")


def test_changes_and_capacity_go_through_the_fleet_figures(fleet):
    r = fleet.rollup(by=["cluster"], every="1d")
    got = pau.fleet.rollup.changes(r, "goodput")
    t = r.table.filter(pa.compute.is_valid(r.table["goodput"]))
    exp = pau.fleet.changes.group_changes(t, "goodput", by=["cluster"], period="period_start_ns",
                                          weight="allocated_h")
    assert got.equals(exp)
    assert fleet.changes("goodput", by=["cluster"], every="1d").equals(exp)
    names = r.table["period"].to_pylist()
    cap = fleet.capacity(names[0], names[1], by=["cluster"], every="1d")
    t = r.table.to_pandas()
    for cluster, a, b, acc in zip(*(cap[c].to_pylist() for c in ("cluster", "productive_h_a", "productive_h_b",
                                                                  "accelerators"))):
        pa_ = t[(t.cluster == cluster) & (t.period == names[0])].productive_ns.sum() / H
        pb_ = t[(t.cluster == cluster) & (t.period == names[1])].productive_ns.sum() / H
        assert (a, b) == (pytest.approx(pa_), pytest.approx(pb_))
        assert acc == pytest.approx((pb_ - pa_) / 24)


@settings(max_examples=60, deadline=None)
@given(jobs=st.lists(st.tuples(st.integers(0, 10**17), st.integers(1, 10**16), st.integers(1, 4096)),
                     min_size=1, max_size=8),
       every=EVERY, cut=st.tuples(st.integers(0, 30_000), st.integers(1, 30_000)), whole=st.booleans())
def test_jobs_are_cut_exactly_at_period_boundaries(jobs, every, cut, whole):
    """Jobs with no run, fractional (thousandths) or whole accelerators: the pieces of
    every period sum exactly to the allocation inside [since, until) (prorated at the
    two ends); with whole accelerators each period's piece is accelerators x its ns, by a
    plain loop over the boundaries."""
    from pau.fleet import CELLS_SCHEMA, RUNS_SCHEMA
    from pau.fleet.rollup import period_ends, period_starts, rollup

    rows = []
    for i, (start, length, milli) in enumerate(jobs):
        s, e = T0 + start, T0 + start + length
        acc = max(1, milli // 1000) * 1000 if whole else milli  # thousandths of an accelerator
        rows.append({"job": f"j{i}", "cluster": "c", "scheduler": "slurm", "start_ns": s, "end_ns": e,
                     "accelerators": acc / 1000, "queue_ns": 0, "allocated_accelerator_ns": acc * (e - s) // 1000,
                     "run": None})
    table = pa.table({f.name: [r.get(f.name) for r in rows] for f in JOBS_WITH_RUN}, schema=JOBS_WITH_RUN)
    since, until = T0 + cut[0] * H, T0 + (cut[0] + cut[1]) * H
    r = rollup(RUNS_SCHEMA.empty_table(), CELLS_SCHEMA.empty_table(), table, every=every, since=since, until=until)
    got = sum(r.table["allocated_ns"].to_pylist())
    assert r.table["allocated_ns"].to_pylist() == r.table["unattributed_ns"].to_pylist()
    want = 0
    for row in rows:
        s, e, a = row["start_ns"], row["end_ns"], row["allocated_accelerator_ns"]
        lo, hi = max(s, since), min(e, until)
        if hi > lo:
            want += a * (hi - s) // (e - s) - a * (lo - s) // (e - s)
    assert got == want
    if whole:
        per: dict = {}
        for row in rows:
            t, end = max(row["start_ns"], since), min(row["end_ns"], until)
            while t < end:
                b0 = int(period_starts(np.array([t]), every)[0])
                b1 = min(int(period_ends(np.array([b0]), every)[0]), end)
                per[b0] = per.get(b0, 0) + int(row["accelerators"]) * (b1 - t)
                t = b1
        starts = period_starts(np.array(r.table["period_start_ns"].to_pylist(), np.int64), every).tolist()
        assert dict(zip(starts, r.table["allocated_ns"].to_pylist())) == {k: v for k, v in per.items() if v}


def test_a_sum_beyond_int64_is_refused_and_one_just_below_is_exact():
    """Two jobs of 4,000 accelerators over a week each hold 2.42e18 ns: one group and week
    sums 4.84e18 (past 2**62, within int64, exact); four pass 2**63 - 1 and are refused;
    two such weeks fit each, their month does not."""
    from pau.fleet import CELLS_SCHEMA, RUNS_SCHEMA
    from pau.fleet.rollup import INT64_MAX, rollup

    nov1 = 1_698_796_800 * 10**9  # 2023-11-01 00:00 UTC, a Wednesday
    week = 7 * 24 * H

    def jobs(starts: list[int], acc: int = 4_000) -> pa.Table:
        rows = [{"job": f"j{i}", "cluster": "c", "scheduler": "slurm", "start_ns": s, "end_ns": s + week,
                 "accelerators": float(acc), "queue_ns": 0, "allocated_accelerator_ns": acc * week, "run": None}
                for i, s in enumerate(starts)]
        return pa.table({f.name: [r.get(f.name) for r in rows] for f in JOBS_WITH_RUN}, schema=JOBS_WITH_RUN)

    def roll(t: pa.Table, every: str):
        return rollup(RUNS_SCHEMA.empty_table(), CELLS_SCHEMA.empty_table(), t, every=every)

    monday = nov1 + 5 * 24 * H  # 2023-11-06
    r = roll(jobs([monday, monday]), "1w")
    assert r.table["allocated_ns"].to_pylist() == [2 * 4_000 * week] == r.table["accountable_ns"].to_pylist()
    assert 2 * 4_000 * week > 2**62 and 4 * 4_000 * week > INT64_MAX
    with pytest.raises(PauError, match="beyond int64"):
        roll(jobs([monday] * 4), "1w")
    two_weeks = jobs([nov1, nov1, nov1 + week, nov1 + week])
    assert roll(two_weeks, "1d").table.num_rows == 14
    with pytest.raises(PauError, match="beyond int64"):
        roll(two_weeks, "1mo")


@pytest.mark.parametrize("every", ["1h", "1w", "1mo"])
def test_sparse_sums_equal_dense_ones(fleet, every, monkeypatch):
    """Many groups over many periods keep their sums sparse (compacted as they come):
    the same table as the dense sums of a small rollup."""
    from pau.fleet.sums import Acc as _Acc

    cost = {"accelerator": {"H100": {"contract_rate_per_accelerator_hour": 2.0},
                            "A100": {"contract_rate_per_accelerator_hour": 1.0}}}
    dense = fleet.rollup(by=["cluster", "team"], every=every, cost_model=cost, since=T0, until=T0 + 900 * H)
    monkeypatch.setattr(_Acc, "DENSE", 0)
    monkeypatch.setattr(_Acc, "COMPACT", 16)
    sparse = fleet.rollup(by=["cluster", "team"], every=every, cost_model=cost, since=T0, until=T0 + 900 * H)
    assert sparse.table.equals(dense.table)
    assert dense.table.num_rows > 1


def test_every_run_of_a_job_is_allocated_by_it():
    """Two runs of one job (same cluster and job): the jobs row names one (``run``); the
    other's time is the job's allocation too, not a run standing on its own."""
    from pau.fleet import CELLS_SCHEMA, RUNS_SCHEMA
    from pau.fleet.rollup import rollup

    n = 3
    cols = {f.name: pa.nulls(n, f.type) for f in RUNS_SCHEMA}
    cols.update(run=pa.array(["r1", "r2", "r3"]), job=pa.array(["J", "J", "K"]), cluster=pa.array(["c", "c", "c"]),
                start_ns=pa.array([T0, T0 + H, T0]), end_ns=pa.array([T0 + H, T0 + 2 * H, T0 + H]))
    runs = pa.table(cols, schema=RUNS_SCHEMA)
    cells = pa.table({"run": ["r1", "r2", "r3"], "hour_ns": [T0, T0 + H, T0], "state": ["productive"] * 3,
                      "activity": ["unknown"] * 3, "duration_ns": [H, H, 2 * H]}, schema=CELLS_SCHEMA)
    job = {"job": "J", "cluster": "c", "scheduler": "slurm", "start_ns": T0, "end_ns": T0 + 2 * H,
           "accelerators": 4.0, "queue_ns": 0, "allocated_accelerator_ns": 8 * H, "run": "r1"}
    jobs = pa.table({f.name: [job.get(f.name)] for f in JOBS_WITH_RUN}, schema=JOBS_WITH_RUN)
    r = rollup(runs, cells, jobs, every="1d")
    assert r.table["allocated_ns"].to_pylist() == [8 * H + 2 * H]  # job J's allocation, and run r3 alone (K)
    assert r.table["accountable_ns"].to_pylist() == [4 * H]



@pytest.mark.parametrize("every", ["1d", "1w", "1mo"])
@pytest.mark.parametrize("tz", ["America/New_York", "Asia/Tokyo"])
def test_local_periods_equal_pandas(fleet, every, tz):
    r = fleet.rollup(by=["cluster"], every=every, tz=tz)
    exp = _expected(fleet, ["cluster"], every, tz=tz)
    cols = ["allocated_ns", "accountable_ns", *STATE_COL.values()]
    got = r.table.to_pandas().set_index(["cluster", "period_start_ns"])[cols].sort_index()
    exp = exp[cols].sort_index()
    exp = exp[(exp != 0).any(axis=1)]
    got = got[(got != 0).any(axis=1)]
    pd.testing.assert_frame_equal(got.astype("int64"), exp.astype("int64"), check_names=False)
    # named by the local date
    first = r.table.to_pylist()[0]
    local = pd.Timestamp(first["period_start_ns"], unit="ns", tz="UTC").tz_convert(tz)
    assert local.hour == 0 and first["period"].startswith(str(local.year))


def test_a_local_day_of_a_daylight_saving_change_lasts_25_hours():
    from pau.fleet import CELLS_SCHEMA, RUNS_SCHEMA
    from pau.fleet.rollup import rollup

    s = 1_699_056_000 * 10**9  # 2023-11-04 00:00 UTC; New York leaves daylight saving time on the 5th
    job = {"job": "j", "cluster": "c", "scheduler": "slurm", "start_ns": s, "end_ns": s + 72 * H,
           "accelerators": 1.0, "queue_ns": 0, "allocated_accelerator_ns": 72 * H, "run": None}
    jobs = pa.table({f.name: [job.get(f.name)] for f in JOBS_WITH_RUN}, schema=JOBS_WITH_RUN)
    r = rollup(RUNS_SCHEMA.empty_table(), CELLS_SCHEMA.empty_table(), jobs, every="1d", tz="America/New_York")
    got = dict(zip(r.table["period"].to_pylist(), r.table["allocated_ns"].to_pylist()))
    assert got == {"2023-11-03": 4 * H, "2023-11-04": 24 * H, "2023-11-05": 25 * H, "2023-11-06": 19 * H}
    with pytest.raises(PauError, match="not on a UTC hour"):
        rollup(RUNS_SCHEMA.empty_table(), CELLS_SCHEMA.empty_table(), jobs, every="1d", tz="Asia/Kolkata")
    with pytest.raises(PauError, match="hours are UTC hours"):
        rollup(RUNS_SCHEMA.empty_table(), CELLS_SCHEMA.empty_table(), jobs, every="1h", tz="Europe/Paris")
    with pytest.raises(PauError, match="no such time zone"):
        rollup(RUNS_SCHEMA.empty_table(), CELLS_SCHEMA.empty_table(), jobs, every="1d", tz="Mars/Olympus")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 10**13)), max_size=60))
def test_pooled_recovery_figures_are_numpy_quantiles_row_by_row(pairs):
    """The rows' times to recover at once (a sort by row and time, numpy's linear rule
    written out) against its slow twin: ``np.quantile`` and a Python mean, row by row."""
    from pau.fleet.rollup import _recovery_columns

    rows = np.array([r for r, _ in pairs], np.int64)
    d = np.array([v for _, v in pairs], np.int64)
    got = {k: v.to_pylist() for k, v in _recovery_columns(rows, d, 7).items()}
    for r in range(7):
        mine = [v for rr, v in pairs if rr == r]
        assert got["recoveries"][r] == len(mine)
        if not mine:
            assert all(got[f"time_to_recover_{q}_s"][r] is None for q in ("mean", "p50", "p90", "max"))
            continue
        a = np.array(mine, np.int64)
        assert got["time_to_recover_mean_s"][r] == sum(mine) / len(mine) / 10**9
        assert got["time_to_recover_p50_s"][r] == float(np.quantile(a, 0.5, method="linear")) / 10**9
        assert got["time_to_recover_p90_s"][r] == float(np.quantile(a, 0.9, method="linear")) / 10**9
        assert got["time_to_recover_max_s"][r] == max(mine) / 10**9


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 2**61)), max_size=40))
def test_exact_sums_by_code_against_python_integers(pairs):
    """``sum_by`` (``numpy.add.at`` in int64 below 2**62 in all, else the exact halves or
    Python integers) against Python's integers; past int64 it refuses."""
    from pau.fleet.sums import sum_by

    codes = np.array([c for c, _ in pairs], np.int64)
    values = np.array([v for _, v in pairs], np.int64)
    want = [sum(v for c, v in pairs if c == k) for k in range(10)]
    if max(want) > 2**63 - 1:
        with pytest.raises(pau.errors.PauError, match="beyond int64"):
            sum_by(codes, values, 10)
    else:
        assert sum_by(codes, values, 10).tolist() == want


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 30), chunk=st.integers(1, 30), picks=st.lists(st.integers(-3, 32), min_size=1, max_size=40),
       data=st.data())
def test_cell_runs_are_found_as_a_slice_or_one_by_one(n, chunk, picks, data):
    """pau.fleet.groups.KeyIndex against a list's index: the dictionary a slice of the
    runs (its offset), another order, or holding keys of no run (-1); a dictionary, its
    plain values, and again (the guesses the last lookup left)."""
    keys = [f"r{i:03d}" for i in range(n)]
    runs = pa.chunked_array([keys[i:i + chunk] for i in range(0, n, chunk)], pa.string())
    off = data.draw(st.integers(0, n - 1))
    slice_ = data.draw(st.booleans())
    cells = ([keys[off + i % (n - off)] for i in range(len(picks))] if slice_
             else [keys[p] if 0 <= p < n else f"x{p}" for p in picks])
    col = pa.array(cells, pa.string()).dictionary_encode()
    want = [keys.index(c) if c in keys else -1 for c in cells]
    index = fleet_groups.KeyIndex(runs)
    assert index.rows(col).tolist() == want
    assert index.rows(col.cast(pa.string())).tolist() == want
    assert index.rows(col).tolist() == want
    assert index.entries(col.dictionary).tolist() == [keys.index(c) if c in keys else -1
                                                      for c in col.dictionary.to_pylist()]


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(0, 4), st.integers(0, 10**12)),
                     min_size=1, max_size=50), dense=st.booleans())
def test_a_total_column_is_the_sum_a_second_add_gives(rows, dense):
    """Acc.add(total=) against adding the values again into the total column."""
    g, w, c, v = (np.array(x, np.int64) for x in zip(*rows))
    start = 1_704_067_200 * 10**9 + w * 7 * 24 * 3_600 * 10**9
    one, two = (fleet_sums.Acc(4, 7, fleet_periods.parse_every("1w"), 8 if dense else 10**9) for _ in range(2))
    one.add(g, start, c, v, total=5)
    two.add(g, start, c, v)
    two.add(g, start, np.full(len(v), 5), v)
    assert [x.tolist() for x in one.result()] == [x.tolist() for x in two.result()]
