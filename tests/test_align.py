"""Clock alignment across ranks (pau.figures.align): injected offsets are recovered within the
stated uncertainty, the real 8-host DLRM sample gets its offsets, and a trace without
collectives to pair is left as it is, with a warning."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from shared_data import shared

import pau
from pau.figures import align
from pau import cli
from pau.errors import OptionError

DLRM = ("kineto", "param-dlrm-8ranks")


def _hosts(offsets: list[int], *, collectives: int = 20, jitter: int = 800, seed: int = 0) -> pa.Table:
    """Ranks on hosts whose clocks read ``true time + offsets[rank]``: each collective
    ends on every rank within ``jitter`` ns of one true instant (the last rank to join
    releases the others), starting whenever the rank got there; compute between."""
    rng = np.random.default_rng(seed)
    rows = []
    t = 10**9
    for k in range(collectives):
        t += int(rng.integers(200_000, 2_000_000))
        name = "ncclDevKernel_AllReduce" if k % 3 else "ncclDevKernel_AllGather"
        for r, off in enumerate(offsets):
            end = t + int(rng.integers(0, jitter + 1))
            start = end - int(rng.integers(5_000, 150_000))
            rows.append((r, start - 100_000 + off, start - 20_000 + off, "compute", "gemm"))
            rows.append((r, start + off, end + off, "communication", name))
    r, s, e, k, n = zip(*rows)
    return pa.table({"rank": pa.array(r, pa.int32()), "start_ns": pa.array(s, pa.int64()),
                     "end_ns": pa.array(e, pa.int64()), "kind": pa.array(k).dictionary_encode(),
                     "name": pa.array(n).dictionary_encode()})


@pytest.mark.parametrize("offsets", [[0, 1_600_000, -3_000, 11_560_000_000], [5, 5, 5],
                                     [-(2**40), 0, 2**40, 7]])
def test_injected_offsets_are_recovered_within_the_uncertainty(offsets):
    got = align.offsets(_hosts(offsets)).table.to_pylist()
    assert [g["rank"] for g in got] == list(range(len(offsets)))
    for g, off in zip(got, offsets):
        true = off - offsets[0]
        assert g["anchors"] == 20
        assert abs(g["offset_ns"] - true) <= g["uncertainty_ns"] <= 800, (g, true)


def test_aligned_events_read_on_the_reference_clock():
    ev = _hosts([0, 2_000_000_000, -7_000])
    a = align.offsets(ev)
    moved = align.apply(ev, a)
    back = align.offsets(moved).table
    assert all(abs(o) <= u for o, u in zip(back["offset_ns"].to_pylist(), back["uncertainty_ns"].to_pylist()))
    # rank 0 is the reference: its rows are untouched; every row moves by its rank's offset exactly
    by_rank = dict(zip(a.table["rank"].to_pylist(), a.table["offset_ns"].to_pylist()))
    want = [s - by_rank[r] for r, s in zip(ev["rank"].to_pylist(), ev["start_ns"].to_pylist())]
    assert moved["start_ns"].to_pylist() == want


def test_collectives_that_cannot_be_paired_leave_clocks_alone():
    ev = _hosts([0, 1000])
    # rank 1 misses one all-gather: that name's occurrences cannot be paired
    gathers = np.flatnonzero((np.asarray(ev["rank"]) == 1) &
                             (np.asarray(ev["name"].cast(pa.string())) == "ncclDevKernel_AllGather"))
    keep = np.ones(ev.num_rows, bool)
    keep[gathers[0]] = False
    a = align.offsets(ev.filter(pa.array(keep)))
    assert a.names_left_out == 1
    assert a.table["anchors"].to_pylist() == [13, 13]  # the all-reduces only
    only_rank_1 = ev.filter(pc.equal(ev["rank"], 1))
    lone = align.offsets(pa.concat_tables([only_rank_1, ev.filter(pc.equal(ev["rank"], 0)).filter(
        pc.equal(ev.filter(pc.equal(ev["rank"], 0))["kind"].cast(pa.string()), "compute"))]))
    assert lone.table.filter(pc.equal(lone.table["rank"], 1))["offset_ns"].to_pylist() == [None]
    assert align.apply(only_rank_1, lone).equals(only_rank_1)


def test_a_shift_beyond_int64_is_refused():
    a = align.offsets(_hosts([0, 2**62]))  # rank 1 reads 2**62 ahead
    early = _hosts([0, -(2**63) + 10**9])  # ... and a table where rank 1 is near the int64 minimum
    with pytest.raises(pau.errors.PauError, match="rank 1's clock offset .* beyond int64"):
        align.apply(early, a)


def test_the_real_8_host_sample_is_aligned_and_says_so():
    path = shared(*DLRM)
    plain = pau.read(path)
    run = pau.read(path, align="collectives")
    meta = run.metadata["alignment"]
    assert meta["method"] == "collectives" and meta["reference_rank"] == 0 and meta["names_left_out"] == 0
    ranks = {r["rank"]: r for r in meta["ranks"]}
    assert sorted(ranks) == list(range(8))
    assert ranks[0]["offset_ns"] == 0 and all(r["anchors"] == 8 for r in ranks.values())
    # the hosts' clocks agree to a few microseconds (the trace's timestamps are whole us)
    assert all(abs(r["offset_ns"]) <= 10_000 and r["uncertainty_ns"] <= 10_000 for r in ranks.values())
    for rank, r in ranks.items():
        a = run.events.filter(pc.equal(run.events["rank"], rank))["start_ns"].to_pylist()
        b = plain.events.filter(pc.equal(plain.events["rank"], rank))["start_ns"].to_pylist()
        assert a == [x - r["offset_ns"] for x in b]
    s = run.summary()
    assert sum(s["ledger"]["state_ns"].values()) == s["ledger"]["accountable_ns"]


def test_align_is_an_option_of_traces_only():
    with pytest.raises(OptionError, match="align"):
        pau.read(shared("mlperf", "training_v4.0"), align="collectives")
    with pytest.raises(OptionError, match="expected one of collectives"):
        pau.read(shared(*DLRM), align="ntp")


def test_the_cli_aligns(capsys):
    assert cli.main(["report", str(shared(*DLRM)), "--align", "collectives", "--format", "json"]) == 0
    assert '"ledger"' in capsys.readouterr().out
