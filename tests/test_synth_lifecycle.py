"""pau.synth lifecycles: training_job and lifecycle_records.

The generator computes no ledger. What pau's ledger of a generated job must be comes from
the slow twin of the lineage rule (tests/reference_lifecycle.py), replayed on the job's
lifecycle table, or from what the generator planted by construction (its arguments and
its attempts table); pau's ledger must match it to the nanosecond.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pac
import pytest

import pau.core as pc
import reference_lifecycle as ref
from pau import synth
from pau.errors import OptionError

from lifecycle_cases import S, example_a

LIFECYCLE_TYPES = [
    ("record", pa.string()), ("attempt", pa.int32()), ("rank", pa.int32()),
    ("start_ns", pa.int64()), ("end_ns", pa.int64()), ("step", pa.int64()),
    ("block_end_ns", pa.int64()), ("durable_ns", pa.int64()), ("ok", pa.bool_()),
    ("kind", pa.string()), ("tokens", pa.int64()),
]

# Small jobs: seconds-long steps, a failure every ~minute, so every state shows up.
SMALL = dict(ranks=3, steps=120, checkpoint_every=20, mtbf_s=45.0, outage_s=20.0, reinit_s=10.0,
             restore_s=5.0, events=False)
SETTINGS = {
    "sync": dict(seed=1),
    "async": dict(seed=2, async_checkpoint=True, durable_delay_s=15.0),
    "correlated_shrink": dict(seed=3, correlated=0.6, shrink_at_failure=1),
    "corrupt_per_rank_rows": dict(seed=4, corrupt_checkpoint_p=0.3, per_rank_rows=True),
    "no_checkpoints": dict(seed=5, checkpoint_every=None, steps=40),
}


def job(setting: str, **kw) -> synth.TrainingJob:
    return synth.training_job(**{**SMALL, **SETTINGS[setting], **kw})


def per_rank_states(led) -> dict:
    out: dict = {}
    for r in led.table.to_pylist():
        d = out.setdefault(r["rank"], {})
        d[r["state"]] = d.get(r["state"], 0) + r["duration_ns"]
    return out


_TIMES = {"start_ns": "start", "end_ns": "end", "block_end_ns": "block", "durable_ns": "durable"}


def reference_ledger(lifecycle: pa.Table, as_of: int) -> dict:
    """The ledger of a lifecycle (ns) by the slow twin of the lineage rule.

    The twin replays whole units of time, and it only ever compares instants; so the
    lifecycle's instants (and ``as_of``) are numbered in order, the rows replayed with
    those numbers, and unit ``i`` weighs ``T[i+1] - T[i]`` ns: every boundary of a
    record is one of the ``T``, so one label holds over each unit."""
    rows = lifecycle.to_pylist()
    T = sorted({v for r in rows for c in _TIMES if (v := r[c]) is not None} | {as_of})
    num = {t: i for i, t in enumerate(T)}
    conv = [{_TIMES.get(k, k): (num[v] if k in _TIMES else v) for k, v in r.items() if v is not None}
            for r in rows]
    rp = ref.replay(conv, num[as_of])
    by_rank: dict = {}
    cause: Counter = Counter()
    cycles = set()
    for k, secs in rp.seconds.items():
        d = by_rank.setdefault(k, Counter())
        for t, state, _, step, why in secs:
            d[state] += T[t + 1] - T[t]
            if state == "rolled_back":
                cause[why] += T[t + 1] - T[t]
            if state == "checkpoint":
                cycles.add(step)
    state = {(e.rank, e.attempt, e.step): e.state for e in rp.executions}
    tokens = 0  # a row's tokens count once: on its rank, or on its attempt's lowest member rank
    for r in conv:
        if r["record"] == "step" and r.get("tokens") is not None:
            k = r["rank"] if r["rank"] >= 0 else min(m for (a, m) in rp.members if a == r["attempt"])
            tokens += r["tokens"] if state[(k, r["attempt"], r["step"])] == "productive" else 0
    state_ns = sum(by_rank.values(), Counter())
    acc = {k: sum(T[t + 1] - T[t] for t in secs) for k, secs in rp.accountable.items()}
    return {
        "state_ns": dict(state_ns), "state_ns_by_rank": {k: dict(+d) for k, d in by_rank.items()},
        "accountable_ns": sum(acc.values()), "accountable_ns_by_rank": acc,
        "preserved_steps": len({e.step for e in rp.executions if e.state == "productive"}),
        "preserved_tokens": tokens, "preserved_model_cycles": len(cycles),
        "badput_by_cause_ns": dict(cause), "attempts": len(rp.attempts),
    }


def planted_failures(j: synth.TrainingJob) -> int:
    """The failures the generator put in the job (known at its ``as_of``)."""
    return j.attempts["failure_ns"].drop_null().length()


def assert_ledger_matches_reference(j: synth.TrainingJob) -> dict:
    """pau's ledger of the job against the twin's, to the ns; returns the twin's."""
    led = pc.ledger(lifecycle=j.lifecycle, as_of=j.as_of)
    want = reference_ledger(j.lifecycle, j.as_of)
    states = led.state_ns()
    assert set(want["state_ns"]) <= set(states)
    assert states == {s: want["state_ns"].get(s, 0) for s in states}
    assert per_rank_states(led) == {k: d for k, d in want["state_ns_by_rank"].items() if d}
    s = led.summary()
    assert s["accountable_ns"] == want["accountable_ns"]
    acc = {r["rank"]: r["accountable_ns"] for r in led.accountable.to_pylist()}
    assert set(want["accountable_ns_by_rank"]) <= set(acc)
    assert acc == {k: want["accountable_ns_by_rank"].get(k, 0) for k in acc}
    for key in ("preserved_steps", "preserved_tokens", "preserved_model_cycles"):
        assert s[key] == want[key], key
    assert s["failures"] == planted_failures(j)
    assert want["attempts"] == j.attempts.num_rows
    assert s["badput_by_cause_ns"] == want["badput_by_cause_ns"]
    assert s["pending_ns"] == want["state_ns"].get("pending", 0)
    if want["accountable_ns"]:
        assert s["goodput"] == pytest.approx(want["state_ns"].get("productive", 0) / want["accountable_ns"])
    return want


def test_reference_ledger_of_design_example_a():
    """The adapter above on DESIGN §2.4 A (seconds in ns): the twin's own figures."""
    t = example_a()
    want = reference_ledger(t, 210 * S)
    assert want["state_ns"] == {s: n * S for s, n in ref.state_totals(ref.attribute(ref_rows(t), 210)).items()}
    # DESIGN's hand-worked figures
    assert want["state_ns"] == {s: n * S for s, n in {
        "productive": 100, "rolled_back": 35, "checkpoint": 20, "initialization": 10, "recovery.outage": 25,
        "recovery.reinit": 10, "recovery.restore": 10}.items()}
    assert want["badput_by_cause_ns"] == {"xid79": 35 * S}
    assert (want["preserved_steps"], want["preserved_model_cycles"], want["accountable_ns"]) == (10, 2, 210 * S)


def ref_rows(t: pa.Table) -> list:
    """A lifecycle table in whole seconds as the twin's rows."""
    return [{_TIMES.get(k, k): (v // S if k in _TIMES else v) for k, v in r.items() if v is not None}
            for r in t.to_pylist()]


# --------------------------------------------------------------------------- training_job


def test_same_seed_same_job_and_seeds_differ():
    a = synth.training_job(ranks=2, steps=60, checkpoint_every=10, mtbf_s=40, seed=7)
    b = synth.training_job(ranks=2, steps=60, checkpoint_every=10, mtbf_s=40, seed=7)
    assert a.lifecycle.equals(b.lifecycle) and a.events.equals(b.events) and a.attempts.equals(b.attempts)
    c = synth.training_job(ranks=2, steps=60, checkpoint_every=10, mtbf_s=40, seed=8)
    assert not a.lifecycle.equals(c.lifecycle)
    # events=False changes nothing else
    d = synth.training_job(ranks=2, steps=60, checkpoint_every=10, mtbf_s=40, seed=7, events=False)
    assert d.events is None and d.lifecycle.equals(a.lifecycle) and d.attempts.equals(a.attempts)


def test_schemas_are_exactly_the_design_columns():
    j = synth.training_job(ranks=2, steps=30, checkpoint_every=10, mtbf_s=30, seed=1)
    assert [(f.name, f.type) for f in j.lifecycle.schema] == LIFECYCLE_TYPES
    assert j.lifecycle.schema.equals(synth.lifecycle_schema())
    assert j.events.schema.equals(synth.events_schema())
    records = set(j.lifecycle["record"].to_pylist())
    assert records == {"accountable", "attempt", "phase", "step", "checkpoint_save", "restore",
                       "failure"}
    big = synth.lifecycle_records(5_000, ranks=16, attempts=4)
    assert [(f.name, f.type) for f in big.schema] == LIFECYCLE_TYPES


@pytest.mark.parametrize("setting", sorted(SETTINGS))
@pytest.mark.parametrize("extra", [{}, {"seed_offset": 10}], ids=["a", "b"])
def test_ledger_matches_reference(setting, extra):
    kw = {"seed": SETTINGS[setting]["seed"] + extra["seed_offset"]} if extra else {}
    j = job(setting, **kw)
    failures = planted_failures(j)
    assert failures >= 1 and j.attempts["kind"].to_pylist() == ["failed"] * failures + ["completed"]
    want = assert_ledger_matches_reference(j)
    # the job completed: every step it was asked for is preserved
    steps = {**SMALL, **SETTINGS[setting]}["steps"]
    assert want["preserved_steps"] == pac.max(j.lifecycle["step"]).as_py() == steps


def test_shrink_ends_the_lost_ranks_accountable_time():
    j = job("correlated_shrink")
    att = j.attempts.to_pylist()
    assert att[0]["ranks"] == 3 and all(a["ranks"] == 2 for a in att[1:])
    lost = att[0]["failure_rank"] if att[0]["failure_rank"] >= 0 else 2
    acc = {r["rank"]: r for r in j.lifecycle.filter(pac.equal(j.lifecycle["record"], "accountable"))
           .to_pylist()}
    assert acc[lost]["end_ns"] == att[0]["failure_ns"]
    want = assert_ledger_matches_reference(j)
    assert want["state_ns_by_rank"][lost].get("recovery.outage", 0) == 0
    assert want["accountable_ns_by_rank"][lost] == att[0]["failure_ns"] - j.start_ns


def _safe_as_of_points(full: synth.TrainingJob, n: int, rng) -> list[int]:
    """Instants at, just before and just after record boundaries, and random ones."""
    lc = full.lifecycle
    times = set()
    for c in ("start_ns", "end_ns", "block_end_ns", "durable_ns"):
        times.update(x for x in lc[c].to_pylist() if x is not None)
    times = np.array(sorted(times), np.int64)
    pts = np.concatenate([rng.choice(times, n), rng.choice(times, n) + 1, rng.choice(times, n) - 1,
                          rng.integers(full.start_ns, full.as_of, n)])
    return sorted({int(p) for p in pts if p >= full.start_ns})


def awaiting_restore(j: synth.TrainingJob) -> bool:
    """The last attempt (not the first) has done nothing yet: no step, no ok restore, no
    durable checkpoint (it is in init, or died there)."""
    last = j.attempts.to_pylist()[-1]
    if last["attempt"] == 1:
        return False
    lc = j.lifecycle.filter(pac.equal(j.lifecycle["attempt"], last["attempt"]))
    rec = lc["record"]
    steps = pac.sum(pac.equal(rec, "step")).as_py() or 0
    ok_restores = lc.filter(pac.and_(pac.equal(rec, "restore"), pac.fill_null(lc["ok"], True))).num_rows
    durable = lc.filter(pac.and_(pac.equal(rec, "checkpoint_save"), pac.is_valid(lc["durable_ns"]))).num_rows
    return steps == 0 and ok_restores == 0 and durable == 0


@pytest.mark.parametrize("setting", ["sync", "async", "correlated_shrink", "corrupt_per_rank_rows"])
def test_running_job_as_of_matches_reference(setting):
    """Every instant, also while a restarted attempt has done nothing yet (in init, or
    died there: pau passes it over when it looks for the start of the lineage, as the
    twin does; docs/lifecycle.md); some instants of each setting are such."""
    full = job(setting)
    rng = np.random.default_rng(0)
    points = _safe_as_of_points(full, 12, rng)
    assert len(points) >= 20
    waiting = 0
    for as_of in points:
        j = job(setting, as_of=as_of)
        assert j.as_of == as_of
        assert_ledger_matches_reference(j)
        waiting += awaiting_restore(j)
    assert waiting >= 1


def test_running_job_specific_instants():
    full = job("async", steps=200)
    lc = full.lifecycle.to_pylist()
    restored = {r["attempt"] for r in lc if r["record"] == "restore"}
    step2 = next(r for r in lc if r["record"] == "step" and r["attempt"] in restored
                 and r["end_ns"] is not None)
    save = next(r for r in lc if r["record"] == "checkpoint_save" and r["durable_ns"] is not None
                and r["durable_ns"] > r["block_end_ns"])
    fail = next(r for r in lc if r["record"] == "failure")
    cases = {
        "mid step after a restore": (step2["start_ns"] + step2["end_ns"]) // 2,
        "async save blocked, not durable yet": save["block_end_ns"] + 1,
        "async save durable exactly": save["durable_ns"],
        "at a failure": fail["start_ns"],
        "in the outage after attempt 1": fail["start_ns"] + 1,
    }
    for name, as_of in cases.items():
        j = job("async", steps=200, as_of=as_of)
        kinds = j.attempts["kind"].to_pylist()
        assert kinds[-1] == ("failed" if name.startswith(("at a", "in the")) else "running"), name
        want = assert_ledger_matches_reference(j)
        if kinds[-1] == "running":
            assert want["state_ns"].get("pending", 0) > 0 or name.startswith("async save durable"), name


def test_as_of_tables_are_a_prefix_of_the_whole_job():
    full = synth.training_job(ranks=2, steps=60, checkpoint_every=10, mtbf_s=40, seed=3)
    steps = full.lifecycle.filter(pac.equal(full.lifecycle["record"], "step")).to_pylist()
    mid = steps[len(steps) // 2]
    as_of = (mid["start_ns"] + mid["end_ns"]) // 2
    cut = synth.training_job(ranks=2, steps=60, checkpoint_every=10, mtbf_s=40, seed=3, as_of=as_of)
    # lifecycle: same records up to as_of (start <= as_of), only later knowledge removed
    key = ["record", "attempt", "rank", "start_ns", "step"]
    before = full.lifecycle.filter(pac.less_equal(full.lifecycle["start_ns"], as_of))
    assert cut.lifecycle.select(key).equals(before.select(key))
    assert cut.lifecycle.filter(pac.greater(cut.lifecycle["end_ns"], as_of)).num_rows == 0
    # events: the whole job's events before as_of, cut at as_of
    ev = full.events.filter(pac.less(full.events["start_ns"], as_of))
    ev = ev.set_column(3, "end_ns", pac.min_element_wise(ev["end_ns"], pa.scalar(as_of, pa.int64())))
    assert cut.events.equals(ev.cast(synth.events_schema()))


@pytest.mark.parametrize("kw", [
    dict(seed=11),
    dict(seed=12, async_checkpoint=True, shrink_at_failure=2, correlated=0.5, straggler=(1, 1.5)),
    dict(seed=13, per_rank_rows=True, as_of_step=0.6),
], ids=["sync", "async_shrink_straggler", "per_rank_running"])
def test_ledger_with_events_conserves_time(kw):
    kw = dict(kw)
    frac = kw.pop("as_of_step", None)
    args = dict(ranks=4, steps=80, checkpoint_every=20, mtbf_s=60.0, outage_s=20.0, reinit_s=10.0,
                restore_s=5.0, **kw)
    j = synth.training_job(**args)
    if frac is not None:  # in the middle of a step, 60 % of the way through the step rows
        st = j.lifecycle.filter(pac.equal(j.lifecycle["record"], "step"))
        st = st.filter(pac.is_valid(st["end_ns"])).to_pylist()
        mid = st[int(len(st) * frac)]
        j = synth.training_job(**args, as_of=(mid["start_ns"] + mid["end_ns"]) // 2)
        assert j.attempts["kind"].to_pylist()[-1] == "running"
    led = pc.ledger(j.events, j.lifecycle, as_of=j.as_of)
    rows = led.table.to_pylist()
    by_rank: dict = {}
    cell: dict = {}
    for r in rows:
        by_rank[r["rank"]] = by_rank.get(r["rank"], 0) + r["duration_ns"]
        cell[(r["state"], r["activity"])] = cell.get((r["state"], r["activity"]), 0) + r["duration_ns"]
    acc = {r["rank"]: r["accountable_ns"] for r in led.accountable.to_pylist()}
    assert by_rank == acc
    want = reference_ledger(j.lifecycle, j.as_of)
    assert sum(acc.values()) == want["accountable_ns"]
    # the activity split changes no state's total
    st = {s: want["state_ns"].get(s, 0) for s in led.state_ns()}
    assert led.state_ns() == st
    # device work happens inside steps; copies fill restores and blocking saves exactly
    assert cell[("productive", "compute")] > 0.3 * st["productive"]
    assert cell.get(("recovery.outage", "idle"), 0) == st["recovery.outage"]
    ck = st["checkpoint"] + st["checkpoint.lost"] + st["checkpoint.unused"]
    assert sum(v for (s, a), v in cell.items() if s.startswith("checkpoint") and a == "memcpy") == ck
    assert cell.get(("recovery.restore", "memcpy"), 0) == st["recovery.restore"]
    ev = j.events
    r, s, e = (ev[c].to_numpy() for c in ("rank", "start_ns", "end_ns"))
    assert np.all((np.diff(r) > 0) | ((np.diff(r) == 0) & (np.diff(s) >= 0))) and np.all(e > s)


def test_job_without_failures_is_all_useful_work_and_overhead():
    j = synth.training_job(ranks=2, steps=50, checkpoint_every=10, mtbf_s=None, seed=0,
                           events=False, tokens_per_step=1000)
    assert planted_failures(j) == 0 and j.attempts["kind"].to_pylist() == ["completed"]
    s = pc.ledger(lifecycle=j.lifecycle, as_of=j.as_of).summary()
    # planted: 50 steps of 1000 tokens, a checkpoint every 10 steps, both ranks all along
    assert (s["failures"], s["preserved_steps"], s["preserved_tokens"], s["preserved_model_cycles"]) == (0, 50, 50_000, 5)
    assert s["accountable_ns"] == 2 * (j.as_of - j.start_ns)
    st = s["state_ns"]
    assert st["rolled_back"] == st["recovery.outage"] == st["pending"] == 0
    assert s["accountable_ns"] == st["productive"] + st["checkpoint"] + st["initialization"]
    assert_ledger_matches_reference(j)


def test_invalid_arguments():
    """A bad argument is an OptionError (a ValueError) naming it, never a bare builtin."""
    for kw, match in [
        (dict(ranks=1, shrink_at_failure=1), "shrink_at_failure needs ranks >= 2"),
        (dict(correlated=1.5), "correlated must be a probability"),
        (dict(corrupt_checkpoint_p=-0.1), "corrupt_checkpoint_p must be a probability"),
        (dict(mtbf_s=0), "mtbf_s must be > 0"),
        (dict(as_of=0), "as_of must be >="),
        (dict(steps=1.5), "steps must be an int"),
        (dict(outage_s="60"), "outage_s must be a number of seconds"),
        (dict(buckets=0), "buckets must be between 1"),
        (dict(ranks=1, steps=1000, mtbf_s=1, max_attempts=20), "no completion within 20 attempts"),
    ]:
        with pytest.raises(OptionError, match=match):
            synth.training_job(**kw, events=False)
    with pytest.raises(OptionError, match="n_step_records must be >= 0"):
        synth.lifecycle_records(-1)
    with pytest.raises(OptionError, match="too many rows for a string column"):
        synth.lifecycle_records(2**30, ranks=2)


# --------------------------------------------------------------------------- DESIGN question


# DESIGN §2.2: later information only moves pending to productive/rolled_back. A restarted
# attempt that has not begun its restore yet must not flip earlier work to rolled_back
# (pau starts the lineage at the last attempt that did something; docs/lifecycle.md).
def test_as_of_never_moves_rolled_back_to_productive():
    t = example_a()
    seen: dict = {}
    for as_of in (120, 135, 145, 210):
        iv = pc.attribute(t, as_of=as_of * S).to_pylist()
        for r in iv:
            if r["state"] in ("productive", "rolled_back"):
                k = (r["attempt"], r["step"])
                assert seen.setdefault(k, r["state"]) == r["state"], (as_of, k)


# --------------------------------------------------------------------------- lifecycle_records


def test_lifecycle_records_size_validity_and_order():
    n = 100_000
    t = synth.lifecycle_records(n, seed=1)
    rec = t["record"]
    is_step = pac.equal(rec, "step")
    assert pac.sum(is_step).as_py() == n
    assert t.schema.equals(synth.lifecycle_schema())
    counts = {r: int(c) for r, c in zip(*np.unique(np.asarray(rec.to_pylist(), object),
                                                     return_counts=True))}
    assert counts["attempt"] == 50 and counts["failure"] == 49 and counts["accountable"] == 1024
    assert counts["phase"] == 50
    # step rows come last, sorted by (rank, start_ns)
    first_step = int(np.argmax(is_step.to_numpy(zero_copy_only=False)))
    steps = t.slice(first_step)
    assert pac.all(pac.equal(steps["record"], "step")).as_py()
    r, s = steps["rank"].to_numpy(), steps["start_ns"].to_numpy()
    assert np.all((np.diff(r) > 0) | ((np.diff(r) == 0) & (np.diff(s) > 0)))
    # valid input for pau: attributed, and every accountable ns exactly once
    iv = pc.attribute(t)
    led = pc.ledger(lifecycle=t)
    dur = np.asarray(iv["end_ns"]) - np.asarray(iv["start_ns"])
    assert int(dur.sum()) == led.accountable_ns()
    st = led.state_ns()
    assert st["productive"] > 0 and st["rolled_back"] > 0
    assert led.summary()["failures"] == 49


def test_lifecycle_records_checkpoints_and_restores_carry_the_lineage():
    # ~150 steps per attempt: checkpoints every 50 become durable and are restored
    t = synth.lifecycle_records(100_000, ranks=64, attempts=10, seed=3)
    assert pac.sum(pac.equal(t["record"], "step")).as_py() == 100_000
    led = pc.ledger(lifecycle=t)
    st, s = led.state_ns(), led.summary()
    assert st["recovery.restore"] > 0 and st["checkpoint"] > 0 and st["checkpoint.lost"] > 0
    assert s["failures"] == 9 and s["preserved_model_cycles"] >= 1
    # the last attempt completes: preserved steps = the highest step it ran
    assert s["preserved_steps"] == pac.max(t["step"]).as_py()


@pytest.mark.parametrize("n, ranks, attempts", [(0, 4, 2), (13, 4, 1), (12, 4, 1), (1003, 7, 5),
                                                (5, 8, 6)])
def test_lifecycle_records_exact_size_small(n, ranks, attempts):
    t = synth.lifecycle_records(n, ranks=ranks, attempts=attempts, seed=2)
    assert pac.sum(pac.equal(t["record"], "step")).as_py() == n
    led = pc.ledger(lifecycle=t)
    assert sum(led.table["duration_ns"].to_pylist()) == led.accountable_ns()
    assert synth.lifecycle_records(n, ranks=ranks, attempts=attempts, seed=2).equals(t)
