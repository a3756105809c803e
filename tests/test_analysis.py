"""pau.figures.stragglers, .compare and .interference: stragglers, compare, co-location and
interference (DESIGN §4); pau.readers.alibaba.

Hand-checkable examples with the arithmetic written next to them, the Alibaba PAI
mini-batch traces (real stragglers), and a property test of the straggler waits
against a slow, obviously correct twin written below.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest
from depth import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pau
from pau.figures import compare, interference, stragglers
from pau.readers import alibaba
from pau.engine.vocab import LIFECYCLE_SCHEMA
import pau.core as core
import pau.synth as synth
from pau.errors import ArgumentTypeError, InvalidRowError, OptionError, PauError

from shared_data import shared

S = 10**9
MINIBATCH = ("cluster", "alibaba", "gpu-v2020", "mini-batch-time")


# ---------------------------------------------------------------------------
# stragglers


def _steps(rows):
    """``(rank, step, end_ns)`` tuples -> a step table."""
    return pa.table({"rank": pa.array([r[0] for r in rows], pa.int32()),
                     "step": pa.array([r[1] for r in rows], pa.int64()),
                     "end_ns": pa.array([r[2] for r in rows], pa.int64())})


def test_stragglers_four_ranks_by_hand():
    # Step 1 ends at 10, 12, 15, 11 s on ranks 0..3: max 15 (rank 2).
    #   waits: 15-10=5, 15-12=3, 0, 15-11=4 -> 12 s charged to rank 2.
    # Step 2 ends at 30, 25, 26, 29: max 30 (rank 0).
    #   waits: 0, 5, 4, 1 -> 10 s charged to rank 0.
    # Step 3 ends at 40, 40, 38, 39: tie at 40 -> the lower rank (0) is charged
    #   0+0+2+1 = 3 s.
    rows = [(0, 1, 10), (1, 1, 12), (2, 1, 15), (3, 1, 11),
            (0, 2, 30), (1, 2, 25), (2, 2, 26), (3, 2, 29),
            (0, 3, 40), (1, 3, 40), (2, 3, 38), (3, 3, 39)]
    # Input order does not matter and the caller's table is left alone.
    t = _steps([(r, k, e * S) for r, k, e in reversed(rows)])
    before = t.to_pydict()
    res = stragglers.stragglers(t)
    assert t.to_pydict() == before
    tab = res.table.to_pydict()
    assert tab["step"] == [1] * 4 + [2] * 4 + [3] * 4
    assert tab["rank"] == [0, 1, 2, 3] * 3
    assert tab["wait_ns"] == [x * S for x in (5, 3, 0, 4, 0, 5, 4, 1, 0, 0, 2, 1)]
    assert tab["charged_ns"] == [x * S for x in (0, 0, 12, 0, 10, 0, 0, 0, 3, 0, 0, 0)]
    assert tab["slowest"] == [False, False, True, False, True, False, False, False, True, False, False, False]
    ranks = res.ranks.to_pydict()
    # Rank 0: slowest in steps 2 and 3 (2/3), charged 10+3 = 13 s of 25 s.
    # Rank 2: slowest in step 1 (1/3), charged 12 s of 25 s.
    assert ranks["slowest_steps"] == [2, 0, 1, 0]
    assert ranks["charged_ns"] == [13 * S, 0, 12 * S, 0]
    assert ranks["wait_ns"] == [5 * S, 8 * S, 6 * S, 6 * S]
    assert ranks["charged_accelerator_seconds"] == [13.0, 0.0, 12.0, 0.0]
    assert ranks["charged_share"] == [13 / 25, 0.0, 12 / 25, 0.0]
    # Persistent: share >= 20 % and > 1/4. Rank 0 (2/3), rank 2 (1/3 and 12/25).
    assert res.persistent == [0, 2]
    assert res.summary()["wait_ns"] == 25 * S
    assert "persistent stragglers" in res.render()


def test_stragglers_from_lifecycle_steps_keyed_by_attempt():
    # Step 5 runs in attempt 1 (cut: rank 1 never ends it) and again in attempt 2.
    # Attempt 1, step 5: only rank 0 has an end -> one row, no wait; the open row
    # is counted in in_flight. Attempt 2, step 5: ends 100, 107 -> rank 0 waits 7.
    lc = pa.table({
        "record": ["accountable", "step", "step", "step", "step", "checkpoint_save"],
        "attempt": pa.array([None, 1, 1, 2, 2, 2], pa.int32()),
        "rank": pa.array([0, 0, 1, 0, 1, 0], pa.int32()),
        "step": pa.array([None, 5, 5, 5, 5, 5], pa.int64()),
        "start_ns": pa.array([0, 10, 10, 90, 90, 110], pa.int64()),
        "end_ns": pa.array([200, 20, None, 100, 107, None], pa.int64()),
    })
    res = stragglers.stragglers(lc)
    assert res.in_flight == 1
    assert res.table.to_pydict()["attempt"] == [1, 2, 2]
    assert res.table["wait_ns"].to_pylist() == [0, 7, 0]
    assert res.table["charged_ns"].to_pylist() == [0, 0, 7]


def test_stragglers_invalid_rows():
    t = _steps([(0, 1, 10), (1, 1, 12), (1, 1, 13)])
    with pytest.raises(InvalidRowError, match="duplicate"):
        stragglers.stragglers(t)
    res, q = stragglers.stragglers(t, on_invalid="quarantine")
    assert q["row"].to_pylist() == [2]  # the second (step 1, rank 1) row
    assert res.table["wait_ns"].to_pylist() == [2, 0]
    with pytest.raises(InvalidRowError, match="rank -1"):
        stragglers.stragglers(_steps([(-1, 1, 10)]))
    empty = stragglers.stragglers(_steps([]))
    assert empty.table.num_rows == 0 and empty.persistent == []


def _ref_waits(rows):
    """Slow twin: per step, max end minus each end; the sum charged to the first
    rank (lowest) at the max."""
    by_step: dict = {}
    for r, k, e in rows:
        by_step.setdefault(k, {})[r] = e
    wait, charged = {}, {}
    for k, ends in by_step.items():
        m = max(ends.values())
        slow = min(r for r, e in ends.items() if e == m)
        for r, e in ends.items():
            wait[(k, r)] = m - e
            charged[(k, r)] = 0
        charged[(k, slow)] = sum(m - e for e in ends.values())
    return wait, charged


@st.composite
def step_rows(draw):
    ranks = draw(st.integers(1, 5))
    steps = draw(st.integers(0, 6))
    rows = []
    for k in range(steps):
        present = draw(st.lists(st.integers(0, ranks - 1), min_size=1, max_size=ranks, unique=True))
        for r in present:
            rows.append((r, k, draw(st.integers(0, 40))))  # small range: many ties
    perm = draw(st.permutations(range(len(rows))))
    return [rows[i] for i in perm]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=examples(200))
@given(step_rows())
def test_stragglers_property_matches_twin(rows):
    res = stragglers.stragglers(_steps(rows))
    tab = res.table.to_pydict()
    wait, charged = _ref_waits(rows)
    got_w = {(k, r): w for k, r, w in zip(tab["step"], tab["rank"], tab["wait_ns"])}
    got_c = {(k, r): c for k, r, c in zip(tab["step"], tab["rank"], tab["charged_ns"])}
    assert got_w == wait
    assert got_c == charged
    # Per step the charged wait equals sum over ranks of (max_end - end), on one rank.
    for k in {k for _, k, _ in rows}:
        ends = [e for _, kk, e in rows if kk == k]
        total = sum(max(ends) - e for e in ends)
        assert sum(c for (kk, _), c in got_c.items() if kk == k) == total
        assert sum(w for (kk, _), w in got_w.items() if kk == k) == total
    assert sum(tab["slowest"]) == len({k for _, k, _ in rows})
    assert sum(res.ranks["charged_ns"].to_pylist()) == sum(res.ranks["wait_ns"].to_pylist())


def test_alibaba_minibatch_persistent_stragglers():
    minibatch = shared(*MINIBATCH)
    # Expected sets derived independently with pandas on the raw CSVs: per sampled
    # iteration, the worker with the largest batch_time_norm, counted, and the wait
    # (max - own) summed and charged to it. Job 4: workers 5..8 have mean batch
    # times 258-328 against ~62 for workers 1-4 and 9; workers 7 and 8 are slowest
    # in 44 % and 22 % of iterations, 5 and 6 carry 36 % and 21 % of the wait.
    # Job 2: worker 5 (mean 908 vs 686-856) is slowest in 233 of 254 iterations.
    expected = {1: [0, 1], 2: [5], 3: [0, 1], 4: [5, 6, 7, 8]}
    iterations = {1: 300, 2: 254, 3: 249, 4: 2183}
    for job, want in expected.items():
        t = alibaba.read_alibaba_minibatch(minibatch / f"job_{job}_norm.csv")
        assert t.column_names[:4] == ["rank", "step", "start_ns", "end_ns"]
        res, q = stragglers.stragglers(t, on_invalid="quarantine")
        # job 2 repeats one (worker, iteration) row: set aside, not dropped silently
        assert q.num_rows == (1 if job == 2 else 0)
        assert res.summary()["steps"] == iterations[job]
        assert res.ranks.num_rows == 10
        assert res.persistent == want, job
        assert sum(res.ranks["charged_ns"].to_pylist()) == res.summary()["wait_ns"]
    # Job 1, iteration 1 (first lines of the file): worker 1 is slowest at 509 units;
    # worker 0 (476) waits 33 units = 33 ms at the default 1 ms per unit.
    t = alibaba.read_alibaba_minibatch(minibatch / "job_1_norm.csv")
    first = stragglers.stragglers(t).table.slice(0, 2).to_pydict()
    assert first["wait_ns"] == [33_000_000, 0]


# ---------------------------------------------------------------------------
# compare


def _uniform_job(ranks: int, init_s: int, steps: int, step_s: int) -> pa.Table:
    """A lifecycle: ``ranks`` accelerators, an init phase, ``steps`` steps, no failure."""
    end = (init_s + steps * step_s) * S
    recs = [("accountable", None, r, 0, end, None, None) for r in range(ranks)]
    recs.append(("attempt", 1, -1, 0, end, None, "completed"))
    recs.append(("phase", 1, -1, 0, init_s * S, None, "init"))
    for k in range(1, steps + 1):
        s0 = (init_s + (k - 1) * step_s) * S
        recs.append(("step", 1, -1, s0, s0 + step_s * S, k, None))
    cols = list(zip(*recs))
    return pa.table({"record": pa.array(cols[0], pa.string()), "attempt": pa.array(cols[1], pa.int32()),
                     "rank": pa.array(cols[2], pa.int32()), "start_ns": pa.array(cols[3], pa.int64()),
                     "end_ns": pa.array(cols[4], pa.int64()), "step": pa.array(cols[5], pa.int64()),
                     "kind": pa.array(cols[6], pa.string())})


def test_compare_1024_accelerators_vs_512_faster():
    # a: 1,024 accelerators at $2/h, init 10 s, 10 steps of 10 s -> 110 s each.
    #    accountable 1,024 x 110 = 112,640 acc-s; per step 11,264 acc-s
    #    (productive 1,024 x 100 / 10 = 10,240; initialization 1,024 x 10 / 10 = 1,024).
    #    cost 112,640 / 3,600 x 2 = $62.5778; per step $6.25778.
    # b: 512 faster accelerators at $5/h, init 10 s, 10 steps of 5 s -> 60 s each.
    #    accountable 512 x 60 = 30,720 acc-s; per step 3,072
    #    (productive 512 x 50 / 10 = 2,560; initialization 512 x 10 / 10 = 512).
    #    cost 30,720 / 3,600 x 5 = $42.6667; per step $4.26667.
    # Difference per step: 11,264 - 3,072 = 8,192 = productive 7,680 + initialization 512.
    la = core.ledger(lifecycle=_uniform_job(1024, 10, 10, 10))
    lb = core.ledger(lifecycle=_uniform_job(512, 10, 10, 5))
    r = compare.compare(la, lb, prices_a={"per_accelerator_hour": 2.0}, prices_b={"per_accelerator_hour": 5.0},
                  labels=("1024 x A", "512 x B"))
    m = {row["metric"]: row for row in r.table.to_pylist()}
    assert m["ranks"]["a"] == 1024 and m["ranks"]["b"] == 512
    assert m["accelerator_seconds_per_preserved_step"]["a"] == 11_264
    assert m["accelerator_seconds_per_preserved_step"]["b"] == 3_072
    assert m["accelerator_seconds_per_preserved_step"]["difference"] == 8_192
    assert m["goodput"]["a"] == pytest.approx(100 / 110) and m["goodput"]["b"] == pytest.approx(50 / 60)
    assert m["preserved_steps"]["difference"] == 0
    assert m["total_cost"]["a"] == pytest.approx(112_640 / 3_600 * 2)
    assert m["cost_per_preserved_step"]["a"] == pytest.approx(6.257777, rel=1e-6)
    assert m["cost_per_preserved_step"]["b"] == pytest.approx(4.266666, rel=1e-6)
    assert r.exact == {"productive": 7_680 * S, "initialization": 512 * S, "total": 8_192 * S}
    c = {row["cause"]: row for row in r.by_cause.to_pylist()}
    assert c["productive"]["difference"] == 7_680 and c["initialization"]["difference"] == 512
    # cost per step of initialization: a 1,024 x 10 s x $2/h / 10 = $0.568889; b 512 x 10 x $5/h / 10 = $0.711111
    assert c["initialization"]["cost_difference"] == pytest.approx(1024 * 10 * 2 / 3600 / 10 - 512 * 10 * 5 / 3600 / 10)
    text = r.render()
    assert "1024 x A" in text and "initialization" in text


def test_compare_synthetic_jobs_decomposition_is_exact():
    ja = synth.training_job(ranks=4, steps=200, seed=3, events=False, mtbf_s=100)
    jb = synth.training_job(ranks=4, steps=200, seed=4, events=False, mtbf_s=300)
    la = core.ledger(lifecycle=ja.lifecycle, as_of=ja.as_of)
    lb = core.ledger(lifecycle=jb.lifecycle, as_of=jb.as_of)
    r = compare.compare(la, lb)
    sa, sb = la.summary(), lb.summary()
    total = Fraction(sa["accountable_ns"], sa["preserved_steps"]) - Fraction(sb["accountable_ns"], sb["preserved_steps"])
    assert r.exact["total"] == total
    # The state contributions sum exactly (in rationals) to the total difference.
    assert sum(v for k, v in r.exact.items() if k != "total") == total
    for k, v in r.exact.items():
        if k != "total":
            assert v == Fraction(sa["state_ns"][k], sa["preserved_steps"]) - Fraction(sb["state_ns"][k], sb["preserved_steps"])
    bc = r.by_cause.to_pydict()
    states = [d for d, kind in zip(bc["difference"], bc["kind"]) if kind == "state"]
    assert sum(states) == pytest.approx(float(total) / S, rel=1e-12)
    # Failure rows split rolled_back by cause.
    fail = sum(d for d, kind in zip(bc["a"], bc["kind"]) if kind == "failure")
    assert fail == pytest.approx(sa["state_ns"]["rolled_back"] / sa["preserved_steps"] / S)
    assert "cost_difference" not in r.by_cause.column_names
    with pytest.raises(PauError, match="one side"):
        compare.compare(la, lb, prices_a={"per_accelerator_hour": 1.0})
    with pytest.raises(TypeError):
        compare.compare(la, "b")
    with pytest.raises(ArgumentTypeError, match="compare: expected pau Runs or Ledgers, got str"):
        compare.compare(la, "b")
    # as_of is a run's instant: with a ledger on either side it is refused, never ignored
    with pytest.raises(OptionError, match="as_of"):
        compare.compare(la, lb, as_of=0)


def test_compare_is_one_function_of_runs_and_ledgers():
    """pau.core.compare is pau.figures.compare.compare; a Run side is its ledger plus its
    events (the kernel diff), a Ledger side its ledger alone."""
    assert core.compare is compare.compare
    job_a = synth.training_job(ranks=2, steps=40, mtbf_s=60, checkpoint_every=10, seed=1)
    job_b = synth.training_job(ranks=2, steps=40, mtbf_s=60, checkpoint_every=10, seed=2)
    ra = pau.Run(events=job_a.events, lifecycle=job_a.lifecycle)
    rb = pau.Run(events=job_b.events, lifecycle=job_b.lifecycle)
    runs = compare.compare(ra, rb)
    ledgers = compare.compare(ra.ledger(), rb.ledger())
    assert runs.table.equals(ledgers.table) and runs.by_cause.equals(ledgers.by_cause)
    assert runs.exact == ledgers.exact
    assert ledgers.kernels is None
    assert runs.kernels is not None
    given = compare.compare(ra.ledger(), rb.ledger(), events_a=job_a.events, events_b=job_b.events)
    assert given.kernels is not None and given.kernels.rows == runs.kernels.rows


# ---------------------------------------------------------------------------
# co-location and interference


def test_two_job_colocation_and_interference():
    # Job x holds ranks 0 and 1 for 0-20 s; job y holds rank 1 for 10-30 s.
    # They share rank 1 on [10, 20) s.
    alloc = {"job": np.array(["x", "x", "y"]), "rank": np.array([0, 1, 1]),
             "start_ns": np.array([0, 0, 10 * S]), "end_ns": np.array([20 * S, 20 * S, 30 * S])}
    win = interference.colocated(alloc)
    assert win.to_pylist() == [{"rank": 1, "start_ns": 10 * S, "end_ns": 20 * S, "jobs": ["x", "y"], "n_jobs": 2}]
    # Progress: x does 100 steps alone on [0,10) -> isolated 10/s; 60 steps shared on
    # [10,20) -> 6/s. y does 40 requests shared on [10,20) -> 4/s and 50 alone on
    # [20,30) -> isolated 5/s.
    # Normalized progress: x 6/10 = 0.6 (slowdown 1/0.6 = 1.667), y 4/5 = 0.8 (1.25).
    # System throughput 0.6 + 0.8 = 1.4; fairness 0.6 / 0.8 = 0.75.
    # Lost output: x 10/s x 10 s - 60 = 40 steps; y 5 x 10 - 40 = 10 requests.
    # y's SLO attainment: 0.99 alone, 0.90 shared -> loss 0.09.
    prog = pa.table({"job": ["x", "x", "y", "y"],
                     "start_ns": pa.array([0, 10 * S, 10 * S, 20 * S], pa.int64()),
                     "end_ns": pa.array([10 * S, 20 * S, 20 * S, 30 * S], pa.int64()),
                     "progress": pa.array([100, 60, 40, 50], pa.int64()),
                     "slo_attainment": pa.array([None, None, 0.90, 0.99], pa.float64())})
    res = interference.interference(prog, windows=win)
    t = {r["job"]: r for r in res.table.to_pylist()}
    assert t["x"]["normalized_progress"] == pytest.approx(0.6)
    assert t["y"]["normalized_progress"] == pytest.approx(0.8)
    assert t["x"]["slowdown"] == pytest.approx(10 / 6)
    assert t["y"]["slowdown"] == pytest.approx(1.25)
    assert t["x"]["lost_output"] == pytest.approx(40) and t["y"]["lost_output"] == pytest.approx(10)
    assert t["x"]["isolated_rate_source"] == "measured"
    assert t["x"]["colocated_ns"] == 10 * S
    assert t["x"]["slo_attainment_loss"] is None
    assert t["y"]["slo_attainment_loss"] == pytest.approx(0.09)
    s = res.summary()
    assert s["system_throughput"] == pytest.approx(1.4)
    assert s["fairness"] == pytest.approx(0.75)
    assert s["lost_output"] == pytest.approx(50)
    assert "fairness" in res.render()
    # A given isolated rate wins over the measured one: x at 12/s -> 6/12 = 0.5.
    res2 = interference.interference(prog, {"x": 12}, windows=win)
    assert res2.table.to_pylist()[0]["normalized_progress"] == pytest.approx(0.5)
    assert res2.table.to_pylist()[0]["isolated_rate_source"] == "given"


def test_interference_errors_and_colocated_edges():
    # Touching allocations do not overlap (half-open), and a job's own two rows on
    # a rank are one job.
    alloc = {"job": np.array([1, 2, 1, 1]), "rank": np.array([0, 0, 3, 3]),
             "start_ns": np.array([0, 10, 0, 5]), "end_ns": np.array([10, 20, 8, 9])}
    assert interference.colocated(alloc).num_rows == 0
    # Three jobs: pieces with different job sets stay separate; equal ones merge.
    alloc = {"job": np.array(["a", "b", "c", "a"]), "rank": np.array([0, 0, 0, 0]),
             "start_ns": np.array([0, 0, 5, 10]), "end_ns": np.array([10, 20, 15, 20])}
    got = [(r["start_ns"], r["end_ns"], r["jobs"]) for r in interference.colocated(alloc).to_pylist()]
    assert got == [(0, 5, ["a", "b"]), (5, 15, ["a", "b", "c"]), (15, 20, ["a", "b"])]
    prog = pa.table({"job": ["x"], "start_ns": pa.array([0], pa.int64()), "end_ns": pa.array([10], pa.int64()),
                     "progress": pa.array([5], pa.int64())})
    with pytest.raises(PauError, match="never ran alone"):
        interference.interference(prog)
    part = {"start_ns": [5], "end_ns": [20], "jobs": [["x"]]}
    with pytest.raises(InvalidRowError, match="partly co-located"):
        interference.interference(prog, {"x": 1.0}, windows=pa.table(part))


@st.composite
def allocations(draw):
    n = draw(st.integers(0, 7))
    rows = []
    for _ in range(n):
        s = draw(st.integers(0, 12))
        rows.append((draw(st.sampled_from("abc")), draw(st.integers(0, 2)), s, s + draw(st.integers(0, 6))))
    return rows


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=examples(200))
@given(allocations())
def test_colocated_property_matches_twin(rows):
    # Slow twin: at every integer instant t (all times are integers), the jobs whose
    # allocation [s, e) on the rank covers t.
    want = {}
    for rank in range(3):
        for t in range(20):
            jobs = sorted({j for j, r, s, e in rows if r == rank and s <= t < e})
            if len(jobs) >= 2:
                want[(rank, t)] = jobs
    tab = {"job": np.array([r[0] for r in rows], dtype=object).astype(str) if rows else np.array([], str),
           "rank": np.array([r[1] for r in rows], np.int64), "start_ns": np.array([r[2] for r in rows], np.int64),
           "end_ns": np.array([r[3] for r in rows], np.int64)}
    out = interference.colocated(tab).to_pylist()
    got = {}
    for row in out:
        assert row["n_jobs"] == len(row["jobs"]) >= 2
        for t in range(row["start_ns"], row["end_ns"]):
            assert (row["rank"], t) not in got
            got[(row["rank"], t)] = row["jobs"]
    assert got == want
    # maximal: adjacent rows on a rank never carry the same jobs
    for p, q in zip(out, out[1:]):
        assert not (p["rank"] == q["rank"] and p["end_ns"] == q["start_ns"] and p["jobs"] == q["jobs"])


# ---------------------------------------------------------------------------
# top device work


def _top_reference(events: pa.Table, n: int) -> list:
    """Group by (name, kind) row by row in Python ints: count, total, floor mean, share."""
    sums: dict = {}
    names = events["name"].cast(pa.string()).to_pylist() if "name" in events.column_names else \
        [None] * events.num_rows
    for nm, kd, s, e in zip(names, events["kind"].cast(pa.string()).to_pylist(),
                            events["start_ns"].to_pylist(), events["end_ns"].to_pylist()):
        key = ("(unnamed)" if nm is None else nm, kd)
        c, t = sums.get(key, (0, 0))
        sums[key] = (c + 1, t + (e - s))
    whole = sum(t for _, t in sums.values())
    rows = sorted(sums.items(), key=lambda kv: (-kv[1][1], kv[0][0], kv[0][1]))[:n]
    return [{"name": k[0], "kind": k[1], "count": c, "total_ns": t, "mean_ns": t // c,
             "share": t / whole if whole else 0.0} for k, (c, t) in rows]


@pytest.mark.parametrize("sample", [("nsys", "icon_isc25", "gpu.sqlite"), ("kineto", "hta-trace_filter"),
                                    ("kineto", "hta-mtia_inference_trace")])
def test_top_kernels_of_real_samples_match_the_reference(sample):
    run = pau.read(shared(*sample))
    assert compare.top_kernels(run.events) == _top_reference(run.events, 10)
    assert run.summary()["top_kernels"] == _top_reference(run.events, 10)


def test_top_kernels_edge_cases():
    t = pa.table({"rank": pa.array([0, 0, 1, 1, 1], pa.int32()),
                  "start_ns": pa.array([0, -(2**62) + 1, 0, 0, 5], pa.int64()),
                  "end_ns": pa.array([2**62, 2**62, 2**62, 0, 5], pa.int64()),
                  "kind": pa.array(["compute"] * 5).dictionary_encode(),
                  "name": pa.array(["a", "a", "a", None, "b"])})
    got = compare.top_kernels(t, n=2)
    assert got == _top_reference(t, 2)
    assert got[0]["total_ns"] == 4 * 2**62 - 1 > 2**63  # beyond int64, exact
    assert compare.top_kernels(t.slice(0, 0)) == []
    assert [r["name"] for r in compare.top_kernels(t.drop_columns(["name"]))] == ["(unnamed)"]


def _quantile_reference(values: list, num: int, den: int) -> int:
    """Nearest rank, the slow way: the smallest v with at least num/den of the values <= v."""
    vals = sorted(values)
    return next(v for v in vals if sum(1 for x in vals if x <= v) * den >= num * len(vals))


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 10**12)), min_size=1, max_size=40))
def test_step_figures_match_the_reference(rows):
    """Per rank: count, nearest-rank median and p90, max of finished steps; steps in
    flight (no end) are left out."""
    recs = [dict(record="attempt", attempt=1, rank=-1, start_ns=0, end_ns=None, kind="running")]
    t = {}
    for k, (r, d) in enumerate(rows):
        s = t.get(r, 0)
        recs.append(dict(record="step", attempt=1, rank=r, step=k, start_ns=s, end_ns=s + d))
        t[r] = s + d
    recs.append(dict(record="step", attempt=1, rank=0, step=len(rows), start_ns=t.get(0, 0), end_ns=None))
    lc = pa.Table.from_pylist(recs, schema=LIFECYCLE_SCHEMA)
    got = stragglers.step_figures(lc)
    want = []
    for r in sorted(t):
        d = [dd for rr, dd in rows if rr == r]
        want.append({"rank": r, "steps": len(d), "median_ns": _quantile_reference(d, 1, 2),
                     "p90_ns": _quantile_reference(d, 9, 10), "max_ns": max(d)})
    assert got["per_rank"] == want
    assert got["stragglers"]["ranks"] == len(t)


def test_step_figures_need_steps_of_one_rank_each():
    lc = pa.Table.from_pylist([dict(record="attempt", attempt=1, rank=-1, start_ns=0, end_ns=10),
                               dict(record="step", attempt=1, rank=-1, step=1, start_ns=0, end_ns=10)],
                              schema=LIFECYCLE_SCHEMA)
    assert stragglers.step_figures(lc) is None


def test_alibaba_minibatch_refuses_what_it_cannot_time(tmp_path):
    """A missing file, a bad unit, and batch times that are negative, NaN or past int64
    ns are errors naming the row, never a made-up duration."""
    from pau.errors import InvalidRowError, NoInputError, OptionError

    with pytest.raises(NoInputError, match="no file at"):
        alibaba.read_alibaba_minibatch(tmp_path / "none.csv")
    good = tmp_path / "job_9_norm.csv"
    good.write_text("worker,gpu,time,batch_time_norm\n0,0,1,500\n1,1,1,400\n")
    with pytest.raises(OptionError, match="unit_ns = 0"):
        alibaba.read_alibaba_minibatch(good, unit_ns=0)
    t = alibaba.read_alibaba_minibatch(good, unit_ns=2)
    assert t.column("end_ns").to_pylist() == [1000, 800] and t.column("start_ns").to_pylist() == [0, 0]
    for value, row in (("-3", 1), ("inf", 1), ("1e300", 0)):
        bad = tmp_path / "job_8_norm.csv"
        first, second = (value, "400") if row == 0 else ("500", value)
        bad.write_text(f"worker,gpu,time,batch_time_norm\n0,0,1,{first}\n1,1,1,{second}\n")
        with pytest.raises(InvalidRowError, match=rf"column 'batch_time_norm', row {row}: .*not a batch time"):
            alibaba.read_alibaba_minibatch(bad)
    # with quarantine the bad rows are set aside, named by line, and the rest is timed
    bad.write_text("worker,gpu,time,batch_time_norm\n0,0,1,500\n1,1,1,-3\n,1,2,7\n0,0,2,100\n")
    t, q = alibaba.read_alibaba_minibatch(bad, on_invalid="quarantine")
    assert t.select(["rank", "step", "start_ns", "end_ns"]).to_pylist() == [
        {"rank": 0, "step": 1, "start_ns": 0, "end_ns": 500_000_000},
        {"rank": 0, "step": 2, "start_ns": 500_000_000, "end_ns": 600_000_000}]
    assert q.column("location").to_pylist() == ["line 3", "line 4"] and q.column("row").to_pylist() == [1, 2]
    assert q.column("reason").to_pylist()[1] == "column worker: null worker"
    good_t, none = alibaba.read_alibaba_minibatch(good, on_invalid="quarantine")
    assert none.num_rows == 0 and good_t.num_rows == 2
