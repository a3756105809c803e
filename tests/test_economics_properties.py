"""Busy-time attribution against its slow twin (tests/reference_econ.py) on generated
request logs, plus the exactness DESIGN §3 and §1 promise: attributed plus idle time
equals busy time to the nanosecond per replica, and every phase's attributed time is
within 1 ns of its exact rational share."""

from __future__ import annotations

import pyarrow as pa
import pytest
from depth import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pau.figures.economics as E
import reference_econ as ref

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=examples(150))
STATUSES = ("ok", "ok", "ok", "error", "timeout", "rejected", "cancelled")


@st.composite
def request_rows(draw):
    n = draw(st.integers(0, 8))
    rows = []
    for i in range(n):
        status = draw(st.sampled_from(STATUSES))
        arrival = draw(st.integers(0, 60))
        has_ft = status == "ok" or draw(st.booleans())
        ft = arrival + draw(st.integers(0, 20)) if has_ft else None
        end = (ft if ft is not None else arrival) + draw(st.integers(0, 30))
        if status == "rejected" and draw(st.booleans()):
            ft, end = None, None
        rows.append({"request_id": i, "replica": draw(st.integers(0, 1)), "arrival_ns": arrival,
                     "first_token_ns": ft, "end_ns": end,
                     "input_tokens": draw(st.sampled_from([0, 1, 7, 100, 4096])),
                     "output_tokens": draw(st.integers(0, 40)), "status": status})
    return rows


@st.composite
def busy_rows(draw):
    n = draw(st.integers(0, 5))
    out = []
    for _ in range(n):
        s = draw(st.integers(0, 100))
        out.append((draw(st.integers(0, 2)), s, s + draw(st.integers(0, 50))))
    return out


def _tables(rows, busy):
    req = pa.table({
        "request_id": pa.array([r["request_id"] for r in rows], pa.int64()),
        "replica": pa.array([r["replica"] for r in rows], pa.int64()),
        "arrival_ns": pa.array([r["arrival_ns"] for r in rows], pa.int64()),
        "first_token_ns": pa.array([r["first_token_ns"] for r in rows], pa.int64()),
        "end_ns": pa.array([r["end_ns"] for r in rows], pa.int64()),
        "input_tokens": pa.array([r["input_tokens"] for r in rows], pa.int64()),
        "output_tokens": pa.array([r["output_tokens"] for r in rows], pa.int64()),
        "status": pa.array([r["status"] for r in rows], pa.string()),
    })
    b = pa.table({"replica": pa.array([x[0] for x in busy], pa.int64()),
                  "start_ns": pa.array([x[1] for x in busy], pa.int64()),
                  "end_ns": pa.array([x[2] for x in busy], pa.int64())})
    return req, b


@settings(**SETTINGS)
@given(request_rows(), busy_rows(), st.sampled_from([(1, 1), (1, 4), (0, 1), (3, 0), (0, 0)]))
def test_attribution_matches_twin_and_conserves(rows, busy, w):
    req, b = _tables(rows, busy)
    out = E.requests(req, busy=b, weights={"prefill": w[0], "decode": w[1]})
    phases = ref.request_phases(rows, *w)
    attr, idle = ref.attribute_busy(phases, busy)
    want = [0] * len(rows)
    for p, a in zip(phases, attr):
        want[p[4]] += a
    assert out.table["attributed_ns"].to_pylist() == want
    assert out.busy["idle_ns"].to_pylist() == idle
    _check_within_one_ns(out, phases, busy)
    # exact conservation: every busy ns is attributed to a request or idle
    busy_ns = sum(e - s for _, s, e in busy)
    assert sum(want) + sum(idle) == busy_ns
    s = out.summary()
    assert s["busy_ns"] == busy_ns
    assert (s["productive_ns"] + s["late_ns"] + s["failed_ns"] + s["cancelled_ns"] + s["idle_ns"]
            == busy_ns)
    for r in out.replicas.to_pylist():
        assert (r["accepted_ns"] + r["late_ns"] + r["failed_ns"] + r["cancelled_ns"] + r["idle_ns"]
                == r["busy_ns"])
    # rejected requests never hold accelerator time
    for r, a in zip(rows, want):
        if r["status"] == "rejected":
            assert a == 0


def _check_within_one_ns(out, phases, busy):
    """Every phase's attributed ns is within 1 ns of its exact rational share."""
    share, _ = ref.exact_shares(phases, busy)
    pre = out.table["attributed_prefill_ns"].to_pylist()
    dec = out.table["attributed_decode_ns"].to_pylist()
    for p, x in zip(phases, share):
        got = (dec if p[5] else pre)[p[4]]
        assert abs(got - x) < 1, (p, got, x)


@settings(**SETTINGS)
@given(request_rows(), busy_rows())
def test_outcome_counts_partition_offered(rows, busy):
    req, b = _tables(rows, busy)
    s = E.requests(req, busy=b, slo={"ttft": 10}).summary()
    assert sum(s[o] for o in E.OUTCOMES) == s["offered"] == len(rows)
    den = s["offered"] - s["cancelled"]
    assert s["slo_attainment"] == (s["accepted"] / den if den else None)


@settings(**SETTINGS)
@given(st.integers(1, 10**12), st.lists(st.integers(0, 10**6), min_size=1, max_size=6))
def test_large_lengths_split_exactly(length, tokens):
    # one busy interval of `length` ns shared by requests decoding all of it
    rows = [{"request_id": i, "replica": 0, "arrival_ns": 0, "first_token_ns": 0, "end_ns": length,
             "input_tokens": 0, "output_tokens": t, "status": "ok"} for i, t in enumerate(tokens)]
    req, b = _tables(rows, [(0, 0, length)])
    got = E.requests(req, busy=b).table["attributed_ns"].to_pylist()
    attr, _ = ref.attribute_busy(ref.request_phases(rows), [(0, 0, length)])
    want = [0] * len(rows)
    for p, a in zip(ref.request_phases(rows), attr):
        want[p[4]] += a
    assert got == want and sum(got) == length


# --------------------------------------------------------------------------- native sweep
# Edge cases on purpose: several replicas, zero-length and touching busy intervals,
# busy intervals with nothing in flight, overlapping busy rows on one replica (two
# accelerators), zero-token requests, equal timestamps, and logs both in arrival
# order (the sweep's one-pass path) and shuffled (its sort-once path).


@st.composite
def serving_case(draw):
    replicas = draw(st.integers(1, 3))
    rows = []
    for i in range(draw(st.integers(0, 12))):
        status = draw(st.sampled_from(STATUSES))
        arrival = draw(st.integers(0, 40))
        has_ft = status == "ok" or draw(st.booleans())
        ft = arrival + draw(st.sampled_from([0, 0, 1, 5, 13])) if has_ft else None
        end = (ft if ft is not None else arrival) + draw(st.sampled_from([0, 1, 4, 9, 30]))
        if status == "rejected" and draw(st.booleans()):
            ft, end = None, None
        rows.append({"request_id": i, "replica": draw(st.integers(0, replicas - 1)), "arrival_ns": arrival,
                     "first_token_ns": ft, "end_ns": end,
                     "input_tokens": draw(st.sampled_from([0, 0, 1, 3, 512])),
                     "output_tokens": draw(st.sampled_from([0, 0, 1, 2, 77])), "status": status})
    if draw(st.booleans()):
        rows.sort(key=lambda r: r["arrival_ns"])  # arrival order: the one-pass path
    busy = []
    for rep in range(replicas + draw(st.integers(0, 1))):  # maybe a replica with no request
        t = draw(st.integers(0, 20))
        for _ in range(draw(st.integers(0, 4))):
            length = draw(st.sampled_from([0, 1, 7, 25]))
            busy.append((rep, t, t + length))
            t += length + draw(st.sampled_from([0, 0, 3]))  # 0: touching
        if draw(st.booleans()):  # a second accelerator overlapping the first
            s = draw(st.integers(0, 50))
            busy.append((rep, s, s + draw(st.integers(0, 40))))
    busy = draw(st.permutations(busy))
    return rows, busy


def _want(rows, busy, w=(1, 1)):
    """(prefill ns, decode ns per request, idle ns per busy row) from the slow twin."""
    phases = ref.request_phases(rows, *w)
    attr, idle = ref.attribute_busy(phases, busy)
    pre, dec = [0] * len(rows), [0] * len(rows)
    for p, a in zip(phases, attr):
        (dec if p[5] else pre)[p[4]] += a
    return pre, dec, idle


@settings(**SETTINGS)
@given(serving_case(), st.sampled_from([(1, 1), (2, 5), (0, 1), (1, 0), (0, 0)]))
def test_native_sweep_matches_twin_per_phase(case, w):
    rows, busy = case
    req, b = _tables(rows, busy)
    out = E.requests(req, busy=b, weights={"prefill": w[0], "decode": w[1]})
    pre, dec, idle = _want(rows, busy, w)
    assert out.table["attributed_prefill_ns"].to_pylist() == pre
    assert out.table["attributed_decode_ns"].to_pylist() == dec
    assert out.busy["idle_ns"].to_pylist() == idle
    _check_within_one_ns(out, ref.request_phases(rows, *w), busy)
    # conservation per replica and in total, to the ns
    busy_ns = sum(e - s for _, s, e in busy)
    assert sum(pre) + sum(dec) + sum(idle) == busy_ns == out.summary()["busy_ns"]
    for r in out.replicas.to_pylist():
        assert (r["accepted_ns"] + r["late_ns"] + r["failed_ns"] + r["cancelled_ns"] + r["idle_ns"]
                == r["busy_ns"])


def test_native_sweep_rejects_bad_codes_and_overflow():
    import numpy as np
    import pytest

    from pau import _core
    from pau.errors import PauError

    one = np.array([0], np.int64)
    with pytest.raises(ValueError, match="replica code out of range"):
        _core.attribute_busy(np.array([3], np.int32), one, one, one + 5, one, one, prefill_weight=1, decode_weight=1,
                             busy_replica=np.array([0], np.int32), busy_start=one, busy_end=one + 5, n_replicas=1)
    # two requests of 2**62 tokens in flight together: W = 2**63 > ATTRIB_MAX_WEIGHT, raise, never round
    assert _core.ATTRIB_MAX_WEIGHT == 2**63 - 1
    rows = [{"request_id": i, "replica": 0, "arrival_ns": 0, "first_token_ns": 0, "end_ns": 10,
             "input_tokens": 0, "output_tokens": 2**62, "status": "ok"} for i in range(2)]
    req, b = _tables(rows, [(0, 0, 10)])
    with pytest.raises(PauError, match=r"replica 0 \(at 10 ns\) exceeds 9223372036854775807"):
        E.requests(req, busy=b)
    # the same requests outside every busy interval hold no time and raise nothing
    req, b = _tables(rows, [(0, 10, 20)])
    assert E.requests(req, busy=b).busy["idle_ns"].to_pylist() == [10]
    # one at 2**62 and one at 2**62 - 1: W = 2**63 - 1 is allowed; shares 5 and 5 of 10
    # within 1 ns (exact: 10 * 2**62 / (2**63 - 1) = 5.0000000000000000005...)
    rows[1]["output_tokens"] = 2**62 - 1
    req, b = _tables(rows, [(0, 0, 10)])
    assert E.requests(req, busy=b).table["attributed_ns"].to_pylist() == [5, 5]


def test_precision_budget_raises():
    # A decode of weight 2**62 + 1 (odd) cut into 11 pieces by short requests: each
    # piece adds an inexact len * 2**64 / W to F, so the error bound (2**62 + 1) * 11
    # units of 2**-64 ns exceeds 1 ns and pau raises rather than risk a wrong ns.
    import pytest

    from pau.errors import PauError

    rows = [{"request_id": 0, "replica": 0, "arrival_ns": 0, "first_token_ns": 0, "end_ns": 100,
             "input_tokens": 0, "output_tokens": 2**62 + 1, "status": "ok"}]
    rows += [{"request_id": j, "replica": 0, "arrival_ns": 10 * j, "first_token_ns": 10 * j,
              "end_ns": 10 * j + 3, "input_tokens": 0, "output_tokens": 1, "status": "ok"} for j in range(1, 6)]
    req, b = _tables(rows, [(0, 0, 100)])
    with pytest.raises(PauError, match="fixed-point shares could be off by 1 ns"):
        E.requests(req, busy=b)
    # the same log with small weights is fine
    rows[0]["output_tokens"] = 7
    req, b = _tables(rows, [(0, 0, 100)])
    assert sum(E.requests(req, busy=b).table["attributed_ns"].to_pylist()) == 100


@settings(**SETTINGS)
@given(st.lists(st.tuples(st.integers(0, 2**61), st.integers(1, 2**61), st.integers(0, 2**40)),
                min_size=1, max_size=5),
       st.integers(1, 2**62))
def test_extreme_lengths_and_weights_conserve_within_one_ns(spans, length):
    # busy [0, length) with length up to 2**62 ns, phases up to 2**61 ns long with
    # weights up to 2**40: the 64 x 128-bit products w * dF and the 128/64-bit
    # divisions near their limits. Conservation is exact; every phase within 1 ns.
    rows = [{"request_id": i, "replica": 0, "arrival_ns": s, "first_token_ns": s, "end_ns": s + d,
             "input_tokens": 0, "output_tokens": w, "status": "ok"} for i, (s, d, w) in enumerate(spans)]
    busy = [(0, 0, length)]
    req, b = _tables(rows, busy)
    out = E.requests(req, busy=b)
    phases = ref.request_phases(rows)
    _check_within_one_ns(out, phases, busy)
    share, idle = ref.exact_shares(phases, busy)
    assert out.busy["idle_ns"].to_pylist() == idle
    assert sum(out.table["attributed_ns"].to_pylist()) + idle[0] == length


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_many_phases_on_one_replica_match_twin(seed):
    # 4,000 requests on one replica (8,000 phases, ~5,200 with a fractional share:
    # the native rounding takes its histogram path above 4,096), boundaries from a
    # small set of times so the twin stays fast; many equal weights, so many exact
    # ties broken by row.
    import numpy as np

    rng = np.random.default_rng(seed)
    times = [0, 1_000_003, 2_999_999, 7_777_777, 10_000_000]
    rows = []
    for i in range(4000):
        a, f, e = sorted(rng.choice(times, 3))
        rows.append({"request_id": i, "replica": 0, "arrival_ns": int(a), "first_token_ns": int(f),
                     "end_ns": int(e), "input_tokens": int(rng.choice([0, 1, 3, 500, 4096])),
                     "output_tokens": int(rng.integers(0, 60)), "status": "ok"})
    busy = [(0, 0, 6_000_000), (0, 2_000_000, 10_000_000)]
    req, b = _tables(rows, busy)
    out = E.requests(req, busy=b, weights={"prefill": 1, "decode": 3})
    pre, dec, idle = _want(rows, busy, (1, 3))
    assert out.table["attributed_prefill_ns"].to_pylist() == pre
    assert out.table["attributed_decode_ns"].to_pylist() == dec
    assert out.busy["idle_ns"].to_pylist() == idle
    assert sum(pre) + sum(dec) + sum(idle) == 14_000_000


INT64_MAX = 2**63 - 1


@settings(**SETTINGS)
@given(serving_case(), st.sampled_from([(1, 1), (2, 5), (0, 0)]))
def test_native_sweep_at_the_int64_end_of_time(case, w):
    # The same logs moved so that their last time is 2**63 - 1 ns: phases and busy
    # rows end at the largest int64 (a busy row ending there still ends, and its idle
    # time counts). The shares do not depend on the origin, so the twin answers.
    rows, busy = case
    times = [t for r in rows for t in (r["arrival_ns"], r["first_token_ns"], r["end_ns"]) if t is not None]
    times += [t for _, s, e in busy for t in (s, e)]
    off = INT64_MAX - max(times, default=0)
    rows = [{**r, **{k: (r[k] + off if r[k] is not None else None)
                     for k in ("arrival_ns", "first_token_ns", "end_ns")}} for r in rows]
    busy = [(rep, s + off, e + off) for rep, s, e in busy]
    req, b = _tables(rows, busy)
    out = E.requests(req, busy=b, weights={"prefill": w[0], "decode": w[1]})
    pre, dec, idle = _want(rows, busy, w)
    assert out.table["attributed_prefill_ns"].to_pylist() == pre
    assert out.table["attributed_decode_ns"].to_pylist() == dec
    assert out.busy["idle_ns"].to_pylist() == idle


def test_busy_row_ending_at_int64_max_counts_its_idle():
    # busy [M - 60, M) and [M - 45, M - 1) on one replica (two accelerators); the one
    # request runs [M - 50, M - 20) prefill (3 tokens), [M - 20, M) decode (5 tokens).
    # One phase in flight at a time, so it takes each piece whole. Row 0: idle
    # [M - 60, M - 50) = 10 ns, prefill [M - 50, M - 20) = 30, decode [M - 20, M) = 20;
    # row 1: prefill [M - 45, M - 20) = 25, decode [M - 20, M - 1) = 19, idle 0.
    m = INT64_MAX
    rows = [{"request_id": 0, "replica": 0, "arrival_ns": m - 50, "first_token_ns": m - 20, "end_ns": m,
             "input_tokens": 3, "output_tokens": 5, "status": "ok"}]
    busy = [(0, m - 60, m), (0, m - 45, m - 1)]
    req, b = _tables(rows, busy)
    out = E.requests(req, busy=b)
    assert out.busy["idle_ns"].to_pylist() == [10, 0]
    assert out.table["attributed_prefill_ns"].to_pylist() == [55]
    assert out.table["attributed_decode_ns"].to_pylist() == [39]
    assert out.summary()["busy_ns"] == 104 == 55 + 39 + 10


@settings(**SETTINGS)
@given(serving_case(), st.integers(1, 11))
def test_columns_read_at_an_offset_give_the_same_answer(case, skip):
    # Slices of a larger table (validity bitmaps and values at a bit offset that is
    # not a multiple of 8), status dictionary-encoded: the null masks and status codes
    # read from them give what the same table read from offset 0 gives.
    rows, busy = case
    junk = [{"request_id": -1, "replica": 0, "arrival_ns": None, "first_token_ns": None, "end_ns": None,
             "input_tokens": None, "output_tokens": None, "status": "ok"}] * skip
    req, b = _tables(rows, busy)
    big, _ = _tables(junk + rows, busy)
    big = big.set_column(7, "status", pa.chunked_array([big["status"].combine_chunks().dictionary_encode()]))
    sliced = big.slice(skip)
    assert not rows or sliced["arrival_ns"].chunk(0).offset == skip
    want = E.requests(req, busy=b)
    got = E.requests(sliced, busy=b)
    assert got.table.cast(want.table.schema).to_pylist() == want.table.to_pylist()
    assert got.busy.to_pylist() == want.busy.to_pylist()
    assert got.summary() == want.summary()


def test_null_status_in_a_dictionary_is_named():
    from pau.errors import InvalidRowError

    rows = [{"request_id": i, "replica": 0, "arrival_ns": i, "first_token_ns": i + 1, "end_ns": i + 2,
             "input_tokens": 1, "output_tokens": 1, "status": "ok"} for i in range(12)]
    req, b = _tables(rows, [(0, 0, 20)])
    status = pa.DictionaryArray.from_arrays(pa.array([0] * 9 + [None, 0, 0], pa.int8()), pa.array(["ok"]))
    req = req.set_column(7, "status", status).slice(2)  # row 9 of the table is row 7 of the slice
    with pytest.raises(InvalidRowError, match=r"row 7.*null status"):
        E.requests(req, busy=b)
