"""The shape zoo: device timelines of many shapes for the classify benchmark.

Each shape is a deterministic function of ``(n_events, seed)`` returning an events
table as ``pau.core.classify`` takes it: ``rank`` int32, ``stream`` int32, ``start_ns``
and ``end_ns`` int64, ``kind`` a dictionary of ``pau.core.KINDS`` with ``int8``
indices; sorted by ``(rank, start_ns)`` except the ``unsorted`` shape. Times are ns;
intervals are half-open.

==========================  =====================================================
shape                        what it is
==========================  =====================================================
``synth-8r``                 ``pau.synth.training_run_for_events``, 8 ranks
``synth-1024r``              the same, 1,024 ranks
``kineto-dlrm-8r``           the 8-rank DLRM step (``param-dlrm-8ranks``), tiled in time
``kineto-resnet50-8r``       the ResNet-50 trace (1 rank), tiled to 8 ranks and in time
``kineto-trace_filter-8r``   HTA's ``trace_filter`` sample (2 ranks), tiled to 8 ranks
``heavy-overlap-64r``        64 ranks of back-to-back lognormal kernels (median 22 µs),
                             a collective across every other kernel boundary on a side
                             stream, shifted back by half its length so that it
                             straddles the two kernels; gaps after 2 % of the kernels
``streams16-8r``             16 concurrent streams per rank, mixed kinds
``tiny-8r``                  every event at most 2 µs (kernels, copies, collectives)
``long-collectives-8r``      collectives each spanning 200 to 800 kernels
``unsorted-8r``              ``synth-8r`` with its rows in a random order
==========================  =====================================================

Tiling a real trace (:func:`tile`): the trace's own times, rebased to start at 0;
copy ``c`` in time is shifted by ``c × span`` (span = last end − first start of the
whole trace), so copies follow one another without overlapping; copies across ranks
are the trace's ranks renumbered ``b × ranks_in_trace + rank``.

Sizes: :func:`zoo_events` reads ``PAU_BENCH_ZOO_EVENTS``; without it, a timed run
(``--benchmark-enable``) makes ``10_000_000 × PAU_BENCH_SCALE`` events per shape and
an untimed one (CI, ``--benchmark-disable``) 200,000.
"""

from __future__ import annotations

import functools
import os
import pathlib
import sys
from typing import Callable, Dict, Tuple

import numpy as np
import pyarrow as pa

import engines
import pau
import pau.core
import pau.synth
from bench_config import ConfigError, scaled

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from shared_data import shared  # noqa: E402

KINDS = pau.core.KINDS
COMPUTE, COMM, MEMCPY, MEMSET, SYNC, OTHER = (KINDS.index(k) for k in
                                              ("compute", "communication", "memcpy", "memset",
                                               "sync", "other"))
US = 1_000  # ns

#: Events per shape in a timed run before PAU_BENCH_SCALE, and in an untimed one.
TIMED_EVENTS = 10_000_000
UNTIMED_EVENTS = 200_000


def zoo_events(timed: bool) -> int:
    """Events per shape: ``PAU_BENCH_ZOO_EVENTS`` if set, else
    ``scaled(10_000_000)`` when timed, else 200,000 (see the module docstring)."""
    raw = os.environ.get("PAU_BENCH_ZOO_EVENTS")
    if raw is None:
        return scaled(TIMED_EVENTS) if timed else UNTIMED_EVENTS
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        raise ConfigError(f"PAU_BENCH_ZOO_EVENTS: expected an int, got {raw!r}") from None
    if value < 10_000:
        raise ConfigError(f"PAU_BENCH_ZOO_EVENTS: must be >= 10000 (1,024 ranks need events), "
                          f"got {raw!r}")
    return value


# --------------------------------------------------------------------------- building tables


def events_table(rank, stream, start, end, kind, *, sort: bool = True) -> pa.Table:
    """An events table from numpy columns (``kind``: ``KINDS`` indices), sorted by
    ``(rank, start_ns)`` (ties by end) when ``sort``."""
    rank = np.asarray(rank, np.int32)
    stream = np.asarray(stream, np.int32)
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    kind = np.asarray(kind, np.int8)
    if sort:
        order = np.lexsort((end, start, rank))
        rank, stream, start, end, kind = (a[order] for a in (rank, stream, start, end, kind))
    return pa.table({
        "rank": pa.array(rank, pa.int32()),
        "stream": pa.array(stream, pa.int32()),
        "start_ns": pa.array(start, pa.int64()),
        "end_ns": pa.array(end, pa.int64()),
        "kind": pa.DictionaryArray.from_arrays(pa.array(kind, pa.int8()), pa.array(list(KINDS))),
    })


def _lognormal(rng: np.random.Generator, median: float, sigma: float, size) -> np.ndarray:
    """Whole ns, at least 1, lognormal with the given median."""
    return np.maximum(1, np.rint(median * np.exp(sigma * rng.standard_normal(size)))).astype(np.int64)


def _stream(length: np.ndarray, gap: np.ndarray, offset=None):
    """Back-to-back events on one stream per rank: ``(ranks, count)`` starts and ends
    from lengths and the gaps before each event."""
    step = length + gap
    start = np.cumsum(step, axis=1) - length
    if offset is not None:
        start += np.asarray(offset, np.int64)[:, None]
    return start, start + length


# --------------------------------------------------------------------------- shapes


def synth(n_events: int, seed: int, ranks: int = 8) -> pa.Table:
    """``pau.synth.training_run_for_events``: pau's own synthetic training run."""
    return pau.synth.training_run_for_events(n_events, ranks=ranks, seed=seed)


def unsorted(n_events: int, seed: int) -> pa.Table:
    """:func:`synth` with 8 ranks, its rows permuted at random (seeded)."""
    t = synth(n_events, seed, 8)
    order = np.random.default_rng(seed + 1).permutation(t.num_rows)
    return t.take(pa.array(order)).combine_chunks()


@functools.lru_cache(maxsize=8)
def _trace_columns(sample: str):
    """``(rank 0.., start rebased to 0, end, kind codes, stream)`` of a Kineto sample,
    sorted by ``(rank, start_ns)``."""
    ev = pau.read(shared("kineto", *sample.split("/"))).events
    _, rank = np.unique(ev["rank"].to_numpy(), return_inverse=True)
    start = ev["start_ns"].to_numpy().astype(np.int64)
    end = ev["end_ns"].to_numpy().astype(np.int64)
    kind = engines.kind_codes(ev["kind"])
    if (kind < 0).any():
        raise ValueError(f"{sample}: a kind outside pau.core.KINDS")
    _, stream = np.unique(ev["stream"].to_numpy(zero_copy_only=False), return_inverse=True)
    t0 = start.min()
    order = np.lexsort((end, start, rank))
    return (rank[order].astype(np.int32), start[order] - t0, end[order] - t0, kind[order],
            stream[order].astype(np.int32))


def tile(sample: str, ranks: int, n_events: int) -> pa.Table:
    """A real Kineto trace tiled across ranks (``ranks`` a multiple of its ranks) and in
    time until at least ``n_events`` rows (see the module docstring)."""
    rank, start, end, kind, stream = _trace_columns(sample)
    r0 = int(rank.max()) + 1
    if ranks % r0:
        raise ValueError(f"{sample}: {ranks} ranks is not a multiple of the trace's {r0}")
    blocks = ranks // r0
    span = int(end.max() - start.min())
    copies = max(1, -(-n_events // (rank.size * blocks)))
    shift = np.arange(copies, dtype=np.int64) * span
    cols: list[list[np.ndarray]] = [[], [], [], [], []]
    for b in range(blocks):
        for r in range(r0):
            m = rank == r
            s = (start[m][None, :] + shift[:, None]).ravel()
            cols[0].append(np.full(s.size, b * r0 + r, np.int32))
            cols[1].append(np.tile(stream[m], copies))
            cols[2].append(s)
            cols[3].append((end[m][None, :] + shift[:, None]).ravel())
            cols[4].append(np.tile(kind[m], copies))
    # Rank-major and start-ordered already: copy c + 1 starts where copy c's span ends.
    return events_table(*(np.concatenate(c) for c in cols), sort=False)


def heavy_overlap(n_events: int, seed: int, ranks: int = 64) -> pa.Table:
    """Back-to-back compute kernels (lognormal, median 22 µs, σ 0.5) on stream 0, a gap
    (lognormal, median 10 µs) before 2 % of them; on stream 1 a collective across every
    other kernel boundary (kernels ``j`` and ``j + 1``, ``j`` even) of length ``L``
    (lognormal, median 22 µs, at least 2 ns and at most twice the shorter kernel) shifted
    back by half its length: ``[end_j − ⌊L/2⌋, start_{j+1} + ⌈L/2⌉)``, so each straddles
    the two kernels and covers the gap between them, if any, whole. Two events in three
    are kernels."""
    rng = np.random.default_rng(seed)
    k = max(2, int(round(n_events / ranks / 1.5)) // 2 * 2)
    length = _lognormal(rng, 22 * US, 0.5, (ranks, k))
    gap = np.where(rng.random((ranks, k)) < 0.02, _lognormal(rng, 10 * US, 0.5, (ranks, k)), 0)
    gap[:, 0] = 0
    start, end = _stream(length, gap, offset=rng.integers(0, 50 * US, ranks))
    j = np.arange(0, k - 1, 2)
    cap = 2 * np.minimum(length[:, j], length[:, j + 1])   # >= 2: lengths are >= 1 ns
    lc = np.maximum(2, np.minimum(_lognormal(rng, 22 * US, 0.5, cap.shape), cap))
    c_start = end[:, j] - lc // 2
    c_end = start[:, j + 1] + (lc - lc // 2)
    r = np.repeat(np.arange(ranks), k)
    rc = np.repeat(np.arange(ranks), j.size)
    return events_table(
        np.concatenate([r, rc]),
        np.concatenate([np.zeros(r.size), np.ones(rc.size)]),
        np.concatenate([start.ravel(), c_start.ravel()]),
        np.concatenate([end.ravel(), c_end.ravel()]),
        np.concatenate([np.full(r.size, COMPUTE), np.full(rc.size, COMM)]),
    )


def many_streams(n_events: int, seed: int, ranks: int = 8, streams: int = 16) -> pa.Table:
    """``streams`` independent streams per rank, each of events of lognormal length
    (median 15 µs, σ 1) after lognormal gaps (median 40 µs, σ 1), so that about four
    run at once, kinds drawn per event:
    compute 60 %, communication 20 %, memcpy 10 %, memset 4 %, sync 3 %, other 3 %."""
    rng = np.random.default_rng(seed)
    k = max(1, n_events // (ranks * streams))
    shape = (ranks * streams, k)
    length = _lognormal(rng, 15 * US, 1.0, shape)
    gap = _lognormal(rng, 40 * US, 1.0, shape)
    start, end = _stream(length, gap, offset=rng.integers(0, 20 * US, ranks * streams))
    kind = rng.choice(np.array([COMPUTE, COMM, MEMCPY, MEMSET, SYNC, OTHER]), size=shape,
                      p=[0.6, 0.2, 0.1, 0.04, 0.03, 0.03])
    rank = np.repeat(np.arange(ranks), streams * k)
    stream = np.tile(np.repeat(np.arange(streams), k), ranks)
    return events_table(rank, stream, start.ravel(), end.ravel(), kind.ravel())


def tiny(n_events: int, seed: int, ranks: int = 8) -> pa.Table:
    """Every event at most 2 µs: compute kernels of 100–2,000 ns (uniform) on stream 0,
    70 % back to back, the others after a gap of up to 1 µs (80 % of the events); copies
    (memcpy, memset) on stream 1 and collectives on stream 2, 10 % each, of 100–2,000 ns,
    spread over the same time."""
    rng = np.random.default_rng(seed)
    per = max(10, n_events // ranks)
    parts = []
    for stream, share, kinds in ((0, 0.8, [COMPUTE]), (1, 0.1, [MEMCPY, MEMSET]), (2, 0.1, [COMM])):
        k = max(1, int(per * share))
        length = rng.integers(100, 2_001, (ranks, k))
        if stream == 0:
            gap = np.where(rng.random((ranks, k)) < 0.7, 0, rng.integers(0, 1_001, (ranks, k)))
        else:  # over the same time as stream 0: a mean period of 8 x its ~1.2 µs
            gap = rng.integers(0, 2 * (8 * 1_200 - 1_050) + 1, (ranks, k))
        start, end = _stream(length, gap)
        kind = rng.choice(np.array(kinds), size=(ranks, k))
        parts.append((np.repeat(np.arange(ranks), k), np.full(ranks * k, stream),
                      start.ravel(), end.ravel(), kind.ravel()))
    return events_table(*(np.concatenate(c) for c in zip(*parts)))


def long_collectives(n_events: int, seed: int, ranks: int = 8) -> pa.Table:
    """Compute kernels (lognormal, median 10 µs, σ 0.5) on stream 0, a 20 µs-median gap
    after 5 % of them; on stream 1 collectives each from the start of kernel ``i`` to
    the end of kernel ``i + m − 1`` (``m`` uniform in 200–800 kernels), shifted by up to
    ±5 µs, the next one starting 20–100 kernels later."""
    rng = np.random.default_rng(seed)
    k = max(1_000, n_events // ranks)
    length = _lognormal(rng, 10 * US, 0.5, (ranks, k))
    gap = np.where(rng.random((ranks, k)) < 0.05, _lognormal(rng, 20 * US, 0.5, (ranks, k)), 0)
    start, end = _stream(length, gap)
    rank = [np.repeat(np.arange(ranks), k)]
    stream = [np.zeros(ranks * k)]
    s_all, e_all = [start.ravel()], [end.ravel()]
    kind = [np.full(ranks * k, COMPUTE)]
    for r in range(ranks):
        i = int(rng.integers(0, 50))
        cs, ce = [], []
        while True:
            m = int(rng.integers(200, 801))
            if i + m > k:
                break
            a = start[r, i] + int(rng.integers(-5 * US, 5 * US + 1))
            z = end[r, i + m - 1] + int(rng.integers(-5 * US, 5 * US + 1))
            cs.append(a)
            ce.append(max(a, z))
            i += m + int(rng.integers(20, 101))
        rank.append(np.full(len(cs), r))
        stream.append(np.ones(len(cs)))
        s_all.append(np.asarray(cs, np.int64))
        e_all.append(np.asarray(ce, np.int64))
        kind.append(np.full(len(cs), COMM))
    return events_table(*(np.concatenate(c) for c in (rank, stream, s_all, e_all, kind)))


#: The tiled shapes: name -> (Kineto sample, ranks).
TRACES = {
    "kineto-dlrm-8r": ("param-dlrm-8ranks", 8),
    "kineto-resnet50-8r": ("pytorch-kineto/resnet50_num_workers_0", 8),
    "kineto-trace_filter-8r": ("hta-trace_filter", 8),
}

def _tiled(name: str) -> Callable[[int, int], pa.Table]:
    sample, ranks = TRACES[name]
    return lambda n_events, seed: tile(sample, ranks, n_events)


#: name -> (builder(n_events, seed), common shape?, sorted by (rank, start_ns)?)
SHAPES: Dict[str, Tuple[Callable[[int, int], pa.Table], bool, bool]] = {
    "synth-8r": (lambda n, s: synth(n, s, 8), True, True),
    "synth-1024r": (lambda n, s: synth(n, s, 1024), True, True),
    **{name: (_tiled(name), True, True) for name in TRACES},
    "heavy-overlap-64r": (heavy_overlap, False, True),
    "streams16-8r": (many_streams, False, True),
    "tiny-8r": (tiny, False, True),
    "long-collectives-8r": (long_collectives, False, True),
    "unsorted-8r": (unsorted, False, False),
}


def build(name: str, n_events: int, seed: int) -> pa.Table:
    """The events table of shape ``name`` (a key of :data:`SHAPES`)."""
    return SHAPES[name][0](n_events, seed)
