"""Small hand-written lifecycles (1 rank unless said, times in seconds -> ns)."""

from __future__ import annotations

import pyarrow as pa

S = 10**9
COLUMNS = {
    "record": pa.string(), "attempt": pa.int32(), "rank": pa.int32(), "start_ns": pa.int64(),
    "end_ns": pa.int64(), "step": pa.int64(), "block_end_ns": pa.int64(), "durable_ns": pa.int64(),
    "ok": pa.bool_(), "kind": pa.string(), "tokens": pa.int64(),
}


def table(rows: list[dict]) -> pa.Table:
    """A lifecycle table; times given in seconds in the keys start/end/block/durable."""
    conv = {"start": "start_ns", "end": "end_ns", "block": "block_end_ns", "durable": "durable_ns"}
    out = {c: [] for c in COLUMNS}
    for r in rows:
        r = {conv.get(k, k): (v * S if k in conv and v is not None else v) for k, v in r.items()}
        for c in COLUMNS:
            out[c].append(r.get(c))
    return pa.table({c: pa.array(v, COLUMNS[c]) for c, v in out.items()})


def steps(attempt: int, first: int, last: int, t0: float, dur: float = 10, rank: int = 0, **kw) -> list:
    return [dict(record="step", attempt=attempt, rank=rank, step=k, start=t0 + dur * (k - first),
                 end=t0 + dur * (k - first + 1), **kw) for k in range(first, last + 1)]


def example_a() -> pa.Table:
    """DESIGN §2.4 A."""
    return table(
        [dict(record="accountable", rank=0, start=0, end=210),
         dict(record="attempt", attempt=1, rank=-1, start=0, end=105, kind="failed"),
         dict(record="phase", attempt=1, rank=0, start=0, end=10, kind="init")]
        + steps(1, 1, 5, 10)
        + [dict(record="checkpoint_save", attempt=1, rank=0, step=5, start=60, block=70, durable=70, ok=True)]
        + steps(1, 6, 8, 70)
        + [dict(record="step", attempt=1, rank=0, step=9, start=100),
           dict(record="failure", attempt=1, rank=-1, start=105, kind="xid79"),
           dict(record="attempt", attempt=2, rank=-1, start=130, end=210, kind="completed"),
           dict(record="phase", attempt=2, rank=0, start=130, end=140, kind="init"),
           dict(record="restore", attempt=2, rank=0, step=5, start=140, end=150, ok=True)]
        + steps(2, 6, 10, 150)
        + [dict(record="checkpoint_save", attempt=2, rank=0, step=10, start=200, block=210, durable=210,
                ok=True)]
    )


def example_b() -> pa.Table:
    """DESIGN §2.4 B: the failure hits while checkpoint@6 is being written."""
    return table(
        [dict(record="accountable", rank=0, start=0, end=160),
         dict(record="attempt", attempt=1, rank=-1, start=0, end=85, kind="failed"),
         dict(record="phase", attempt=1, rank=0, start=0, end=10, kind="init")]
        + steps(1, 1, 3, 10)
        + [dict(record="checkpoint_save", attempt=1, rank=0, step=3, start=40, block=50, durable=50)]
        + steps(1, 4, 6, 50)
        + [dict(record="checkpoint_save", attempt=1, rank=0, step=6, start=80),
           dict(record="failure", attempt=1, start=85, kind="node_down"),
           dict(record="attempt", attempt=2, rank=-1, start=100, end=160, kind="completed"),
           dict(record="phase", attempt=2, rank=0, start=100, end=110, kind="init"),
           dict(record="restore", attempt=2, rank=0, step=3, start=110, end=120)]
        + steps(2, 4, 6, 120)
        + [dict(record="checkpoint_save", attempt=2, rank=0, step=6, start=150, block=160, durable=160)]
    )


def steps_for_all_ranks(rows: list) -> list:
    """`rows` with one step row of rank -1 per (attempt, step) (the first, tokens
    100 + step), in start order: a lifecycle logged once for all ranks."""
    seen, out = set(), []
    for r in rows:
        if r["record"] == "step":
            if (r["attempt"], r["step"]) in seen:
                continue
            seen.add((r["attempt"], r["step"]))
            r = dict(r, rank=-1, tokens=100 + r["step"])
        out.append(r)
    return sorted(out, key=lambda r: r["start"])
