"""Lifecycle attribution and the goodput ledger on hand-checked cases.

Each case writes its arithmetic in comments; times are seconds (x 1e9 ns).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import pau.core as pc
from pau import errors

from lifecycle_cases import S, example_a, example_b, steps, table


def states(led) -> dict:
    return {k: v // S for k, v in led.state_ns().items() if v}


def conserved(intervals: pa.Table, led) -> None:
    """The intervals are disjoint per rank and sum to the accountable time."""
    iv = intervals.to_pydict()
    by_rank: dict = {}
    for r, s, e in zip(iv["rank"], iv["start_ns"], iv["end_ns"]):
        assert e > s
        by_rank.setdefault(r, []).append((s, e))
    for r, spans in by_rank.items():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), f"overlap on rank {r}"
    total = sum(e - s for s, e in zip(iv["start_ns"], iv["end_ns"]))
    assert total == led.accountable_ns() == sum(led.table["duration_ns"].to_pylist())


def test_design_example_a():
    led = pc.ledger(lifecycle=example_a())
    # productive: steps 1-5 (att 1) + 6-10 (att 2) = 100; rolled back: 6-8 (30) + 5 s of step 9
    # checkpoint: 60-70 and 200-210; outage 105-130; reinit 130-140; restore 140-150.
    assert states(led) == {"productive": 100, "rolled_back": 35, "checkpoint": 20, "initialization": 10,
                           "recovery.outage": 25, "recovery.reinit": 10, "recovery.restore": 10}
    s = led.summary()
    assert s["accountable_ns"] == 210 * S
    assert s["goodput"] == pytest.approx(100 / 210)  # 47.62 %
    assert s["accountable_ns_per_preserved_step"] == 21 * S
    assert s["preserved_steps"] == 10 and s["failures"] == 1
    assert s["badput_by_cause_ns"] == {"xid79": 35 * S}
    assert s["preserved_model_cycles"] == 2
    conserved(pc.attribute(example_a()), led)


def test_design_example_b_failure_during_checkpoint_write():
    led = pc.ledger(lifecycle=example_b())
    # checkpoint@6 of attempt 1 started at 80 and never became durable: 80-85 is lost.
    assert states(led) == {"productive": 60, "rolled_back": 30, "checkpoint": 20, "checkpoint.lost": 5,
                           "initialization": 10, "recovery.outage": 15, "recovery.reinit": 10,
                           "recovery.restore": 10}
    assert led.summary()["goodput"] == pytest.approx(60 / 160)  # 37.5 %
    iv = pc.attribute(example_b()).to_pylist()
    lost = [r for r in iv if r["state"] == "checkpoint.lost"]
    assert [(r["start_ns"] // S, r["end_ns"] // S, r["step"]) for r in lost] == [(80, 85, 6)]
    rolled = {r["step"] for r in iv if r["state"] == "rolled_back"}
    assert rolled == {4, 5, 6} and {r["attempt"] for r in iv if r["state"] == "rolled_back"} == {1}


def test_asynchronous_checkpoint_only_blocking_part_is_overhead():
    # Save of step 2 blocks 20-22, becomes durable at 35 (while steps 3-4 run);
    # failure at 45 in step 4... steps 3 and 4: 22-32, 32-42; step 5 starts 42, failure at 45.
    rows = ([dict(record="attempt", attempt=1, rank=0, start=0, end=45, kind="failed")]
            + steps(1, 1, 2, 0)
            + [dict(record="checkpoint_save", attempt=1, rank=0, step=2, start=20, block=22, durable=35)]
            + steps(1, 3, 4, 22)
            + [dict(record="step", attempt=1, rank=0, step=5, start=42),
               dict(record="failure", attempt=1, start=45, kind="oom")])
    led = pc.ledger(lifecycle=table(rows))
    # Last attempt failed: head = step 2 (durable at 35). Productive 1-2 = 20; checkpoint 2;
    # rolled back: steps 3-4 (20) + 3 s of step 5 = 23. Accountable 0-45 (no accountable rows).
    assert states(led) == {"productive": 20, "checkpoint": 2, "rolled_back": 23}
    # As of 30 the save is not durable yet: everything after the attempt start is pending
    # (the attempt is running), and the blocking part counts as lost for now.
    early = pc.ledger(lifecycle=table(rows), as_of=30 * S)
    assert states(early) == {"pending": 28, "checkpoint.lost": 2}


def test_restore_of_older_checkpoint_when_newer_is_corrupt():
    # Attempt 1 saves step 2 (ok) and step 4 (durable but corrupt: ok=false), fails at 50.
    # Attempt 2 restores step 2: steps 3-4 of attempt 1 are rolled back even though a save of
    # step 4 exists; its blocking time is lost.
    rows = ([dict(record="attempt", attempt=1, rank=0, start=0, end=50, kind="failed")]
            + steps(1, 1, 2, 0)
            + [dict(record="checkpoint_save", attempt=1, rank=0, step=2, start=20, block=21, durable=21)]
            + steps(1, 3, 4, 21)
            + [dict(record="checkpoint_save", attempt=1, rank=0, step=4, start=41, block=42, durable=42, ok=False),
               dict(record="failure", attempt=1, start=50, kind="xid"),
               dict(record="attempt", attempt=2, rank=0, start=60, end=100, kind="completed"),
               dict(record="restore", attempt=2, rank=0, step=2, start=60, end=70)]
            + steps(2, 3, 5, 70))
    led = pc.ledger(lifecycle=table(rows))
    # productive: att1 steps 1-2 (20) + att2 steps 3-5 (30); rolled back: att1 steps 3-4 (20);
    # checkpoint 1 (step 2) + lost 1 (step 4); unattributed 42-50 (8); outage 50-60; restore 10.
    assert states(led) == {"productive": 50, "rolled_back": 20, "checkpoint": 1, "checkpoint.lost": 1,
                           "unattributed": 8, "recovery.outage": 10, "recovery.restore": 10}


def test_several_failures_before_the_next_checkpoint():
    # ckpt@2 at 20-21. Attempt 1 fails at 35 (step 3 done 21-31, step 4 in flight 31-35).
    # Attempt 2 (40-): restore@2 40-45, step 3 45-55, fails at 58 (step 4 in flight 55-58).
    # Attempt 3 (60-100, completed): restore@2 60-65, steps 3-5 at 65-95.
    rows = ([dict(record="attempt", attempt=1, rank=0, start=0, kind="failed")]
            + steps(1, 1, 2, 0)
            + [dict(record="checkpoint_save", attempt=1, rank=0, step=2, start=20, block=21, durable=21)]
            + steps(1, 3, 3, 21) + [dict(record="step", attempt=1, rank=0, step=4, start=31),
                                   dict(record="failure", attempt=1, start=35, kind="nic")]
            + [dict(record="attempt", attempt=2, rank=0, start=40),
               dict(record="restore", attempt=2, rank=0, step=2, start=40, end=45)]
            + steps(2, 3, 3, 45) + [dict(record="step", attempt=2, rank=0, step=4, start=55),
                                   dict(record="failure", attempt=2, start=58, kind="gpu")]
            + [dict(record="attempt", attempt=3, rank=0, start=60, end=100, kind="completed"),
               dict(record="restore", attempt=3, rank=0, step=2, start=60, end=65)]
            + steps(3, 3, 5, 65))
    led = pc.ledger(lifecycle=table(rows))
    s = led.summary()
    # productive: 1-2 (20) + att3 3-5 (30) = 50. rolled back: att1 14 (nic), att2 13 (gpu).
    assert s["badput_by_cause_ns"] == {"nic": 14 * S, "gpu": 13 * S}
    assert states(led) == {"productive": 50, "rolled_back": 27, "checkpoint": 1, "recovery.outage": 7,
                           "recovery.restore": 10, "unattributed": 5}
    assert s["failures"] == 2 and s["preserved_steps"] == 5
    # MTBF: 100 s of wall time / 2 failures
    assert s["mtbf_s"] == pytest.approx(50.0)


def test_elastic_shrink_between_attempts():
    # Attempt 1 on ranks 0 and 1; ranks 0-1 accountable 0-60. Attempt 2 only on rank 0.
    rows = ([dict(record="accountable", rank=0, start=0, end=60), dict(record="accountable", rank=1, start=0, end=30),
             dict(record="attempt", attempt=1, rank=-1, start=0, end=25, kind="failed")]
            + [dict(record="step", attempt=1, rank=-1, step=k, start=10 * (k - 1), end=10 * k) for k in (1, 2)]
            + [dict(record="checkpoint_save", attempt=1, rank=-1, step=1, start=10, block=10, durable=12),
               dict(record="failure", attempt=1, rank=1, start=25, kind="node_lost"),
               dict(record="attempt", attempt=2, rank=0, start=30, end=60, kind="completed"),
               dict(record="restore", attempt=2, rank=0, step=1, start=30, end=35)]
            + steps(2, 2, 3, 35))
    led = pc.ledger(lifecycle=table(rows))
    per = {(r["rank"], r["state"]): r["duration_ns"] // S for r in led.table.to_pylist()}
    # rank 0: productive step 1 (10) + att2 steps 2-3 (20); rolled back step 2 of att1 (10) and
    # 20-25 unattributed; outage 25-30; restore 5; 55-60 unattributed.
    assert per == {(0, "productive"): 30, (0, "rolled_back"): 10, (0, "unattributed"): 10,
                   (0, "recovery.outage"): 5, (0, "recovery.restore"): 5,
                   (1, "productive"): 10, (1, "rolled_back"): 10, (1, "unattributed"): 5,
                   (1, "recovery.outage"): 5}
    assert led.summary()["preserved_steps"] == 3


def test_failure_at_time_zero():
    rows = [dict(record="accountable", rank=0, start=0, end=50),
            dict(record="attempt", attempt=1, rank=0, start=0, kind="failed"),
            dict(record="failure", attempt=1, start=0, kind="bad_node"),
            dict(record="attempt", attempt=2, rank=0, start=20, end=50, kind="completed")] + steps(2, 1, 3, 20)
    led = pc.ledger(lifecycle=table(rows))
    assert states(led) == {"recovery.outage": 20, "productive": 30}
    assert led.summary()["failures"] == 1


def test_running_job_pending_and_as_of_monotonicity():
    rows = ([dict(record="attempt", attempt=1, rank=0, start=0)]
            + steps(1, 1, 6, 0)
            + [dict(record="checkpoint_save", attempt=1, rank=0, step=2, start=20, block=20, durable=25),
               dict(record="checkpoint_save", attempt=1, rank=0, step=5, start=50, block=50, durable=65)])
    t = table(rows)
    # as of 30: ckpt@2 durable -> steps 1-2 productive; steps 3 (in flight 20-30) pending.
    assert states(pc.ledger(lifecycle=t, as_of=30 * S)) == {"productive": 20, "pending": 10}
    # as of 60: steps 3-6 pending (ckpt@5 durable only at 65).
    assert states(pc.ledger(lifecycle=t, as_of=60 * S)) == {"productive": 20, "pending": 40}
    # as of 65: steps 3-5 become productive, step 6 stays pending; nothing moves back.
    # The attempt runs on with no step after 60: 60-65 is unattributed.
    assert states(pc.ledger(lifecycle=t, as_of=65 * S)) == {"productive": 50, "pending": 10,
                                                            "unattributed": 5}
    led = pc.ledger(lifecycle=t, as_of=60 * S)
    assert led.summary()["goodput"] == pytest.approx(20 / 60)


def test_job_completed_without_final_checkpoint_counts_its_steps():
    # pau trusts `completed`: the last steps are delivered even with no final save.
    rows = ([dict(record="attempt", attempt=1, rank=0, start=0, end=40, kind="completed")]
            + steps(1, 1, 4, 0)
            + [dict(record="checkpoint_save", attempt=1, rank=0, step=2, start=20, block=20, durable=21)])
    led = pc.ledger(lifecycle=table(rows))
    assert states(led) == {"productive": 40}
    assert led.summary()["preserved_model_cycles"] == 1  # only one durable checkpoint


def test_ledger_crosses_states_with_device_activity():
    # Example A with one compute kernel per step 2-8 s into the step and a collective at the
    # end of each step; the full ledger splits each state by activity and still sums to 210.
    t = example_a()
    iv = pc.attribute(t)
    rows = {"rank": [], "start_ns": [], "end_ns": [], "kind": []}
    for r in iv.filter(pa.compute.is_in(iv["state"], pa.array(["productive", "rolled_back"]))).to_pylist():
        s, e = r["start_ns"], r["end_ns"]
        rows["rank"] += [0, 0]
        rows["start_ns"] += [s + 2 * S, min(s + 7 * S, e)]
        rows["end_ns"] += [min(s + 8 * S, e), min(s + 9 * S, e)]
        rows["kind"] += ["compute", "communication"]
    led = pc.ledger(pa.table(rows), t)
    cell = {(r["state"], r["activity"]): r["duration_ns"] // S for r in led.table.to_pylist()}
    # productive steps: 10 steps x (6 compute + 1 exposed comm + 3 idle)
    assert cell[("productive", "compute")] == 60
    assert cell[("productive", "communication")] == 10
    assert cell[("productive", "idle")] == 30
    # rolled back: steps 6-8 full (3 x ...) + step 9 cut at 105: compute 102-105 = 3, idle 2
    assert cell[("rolled_back", "compute")] == 3 * 6 + 3
    assert sum(led.table["duration_ns"].to_pylist()) == 210 * S
    s = led.summary()
    assert s["productive_strict_ns"] == 60 * S and s["goodput_strict"] == pytest.approx(60 / 210)
    assert cell[("recovery.outage", "idle")] == 25


@pytest.mark.parametrize("rows, column, needle", [
    ([dict(record="attempt", attempt=1, rank=0, start=0, end=50, kind="completed"),
      dict(record="step", attempt=1, rank=0, step=1, start=0, end=20),
      dict(record="step", attempt=1, rank=0, step=2, start=10, end=30)], "start_ns", "overlaps"),
    ([dict(record="attempt", attempt=1, rank=0, start=0, end=50, kind="failed"),
      dict(record="attempt", attempt=2, rank=0, start=60, end=70, kind="completed"),
      dict(record="restore", attempt=2, rank=0, step=7, start=60, end=62)], "step", "no ok checkpoint"),
    ([dict(record="attempt", attempt=1, rank=0, start=10, end=50, kind="completed"),
      dict(record="step", attempt=1, rank=0, step=1, start=0, end=20)], "start_ns", "outside attempt"),
    ([dict(record="attempt", attempt=1, rank=0, start=10, end=5, kind="completed")], "end_ns", "before"),
    ([dict(record="bogus", attempt=1, rank=0, start=10)], "record", "unknown record 'bogus'"),
    ([dict(record="attempt", attempt=1, rank=0, start=0, end=5, kind="completed"),
      dict(record="phase", attempt=1, rank=0, start=0, end=5, kind="warmup")], "kind", "unknown phase kind"),
    ([dict(record="step", attempt=3, rank=0, step=1, start=0, end=5)], "attempt", "no attempt record"),
])
def test_bad_lifecycle_names_record_row_and_fix(rows, column, needle):
    with pytest.raises(errors.InvalidRowError) as ei:
        pc.attribute(table(rows))
    e = ei.value
    assert isinstance(e, ValueError) and e.column == column and needle in str(e)
    assert "Fix:" in str(e)


def test_quarantine_sets_bad_rows_aside_and_attributes_the_rest():
    good = example_a()
    bad = table([dict(record="bogus", start=1), dict(record="step", attempt=1, rank=0, step=99, start=5, end=4)])
    t = pa.concat_tables([good, bad])
    res = pc.attribute(t, on_invalid="quarantine")
    assert res.result.equals(pc.attribute(good))
    q = res.quarantine.to_pylist()
    assert [r["row"] for r in q] == [good.num_rows, good.num_rows + 1]
    assert [r["reason"] for r in q] == ["unknown record", "end_ns before start_ns"]


def test_attribute_output_schema():
    iv = pc.attribute(example_a())
    assert iv.column_names == ["rank", "start_ns", "end_ns", "state", "attempt", "step", "cause"]
    assert iv.schema.field("start_ns").type == pa.int64()
    assert np.all(np.diff(np.asarray(iv["start_ns"])) > 0)


@pytest.mark.parametrize("far", [7, 20_000_000])
def test_ranks_far_apart_are_attributed_like_near_ones(far):
    """Ranks spanning more than a lookup table holds (2**24 values) go through the
    pass as dense ranks: the rank far away gets its step like rank 0."""
    s = 10**9
    t = pa.table({"record": ["attempt", "step", "step", "step"], "attempt": [1, 1, 1, 1],
                  "rank": [-1, 0, far, 0], "start_ns": [0, 1 * s, 1 * s, 2 * s],
                  "end_ns": [10 * s, 2 * s, 2 * s, 3 * s], "step": [None, 1, 1, 2],
                  "kind": ["completed", None, None, None]})
    iv = pc.attribute(t).to_pydict()
    got = list(zip(iv["rank"], iv["start_ns"], iv["end_ns"], iv["state"], iv["step"]))
    assert got == [(0, 0, s, "unattributed", None), (0, s, 2 * s, "productive", 1),
                   (0, 2 * s, 3 * s, "productive", 2), (0, 3 * s, 10 * s, "unattributed", None),
                   (far, 0, s, "unattributed", None), (far, s, 2 * s, "productive", 1),
                   (far, 2 * s, 10 * s, "unattributed", None)]


def test_full_ledger_of_ranks_far_apart_equals_the_near_one():
    """The full ledger sums into (rank, state, activity) cells by rank position, not
    rank number: renaming rank 1 to 70,000 changes nothing but the rank."""
    from pau import synth

    job = synth.training_job(ranks=2, steps=60, seed=3, mtbf_s=20, checkpoint_every=5, kernels_per_step=4,
                             buckets=1)

    def renamed(t):
        r = t["rank"].to_numpy(zero_copy_only=False)
        far = np.where(r == 1, 70_000, r).astype(np.int32)
        return t.set_column(t.schema.get_field_index("rank"), "rank", pa.array(far, t.schema.field("rank").type))

    near = pc.ledger(job.events, job.lifecycle)
    far = pc.ledger(renamed(job.events), renamed(job.lifecycle))
    rows = near.table.to_pylist()
    for r in rows:
        r["rank"] = 70_000 if r["rank"] == 1 else r["rank"]
    assert far.table.to_pylist() == rows
    assert far.accountable_ns() == near.accountable_ns() > 0
