"""Mutation fuzzing of the Kineto reader over real samples (issue 19, item 8).

Each case takes a small real trace, mutates it (a truncation, byte flips, a value of
another JSON type, an extreme number, damage to the gzip stream) and reads it with
``pau.read``. The rule: either a correct result, whose device time is conserved (the
ledger's activities sum exactly to each rank's span), or a ``pau.errors.PauError``
naming the file; never another exception, a crash or a hang (each case must finish
in a few seconds).

The seed is fixed, so a failure is reproducible from its case number. The default
budget runs in a few seconds; ``PAU_FUZZ_CASES=N`` runs N cases (the case list is the
same prefix for every N).
"""

from __future__ import annotations

import gzip
import os
import random
import re
import time

import pyarrow.compute as pc
import pytest

import pau
import pau.core
from pau.errors import PauError

from shared_data import locate

#: Small real samples (decompressed JSON is mutated), of several vendors and layouts.
CORPUS = [
    "hta-triton_example/triton_example.json.gz",
    "hta-amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta-critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "hta-critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
    "hta-trace_file_list/inference_rank_1.json.gz",
]
CASES = int(os.environ.get("PAU_FUZZ_CASES", "") or 800)
SEED = 19
#: A case slower than this counts as a hang (the samples read in milliseconds).
SLOW_S = 5.0

# Values that stress the reader: other JSON types, and numbers at and beyond the edges
# of int64 nanoseconds (microseconds * 1000), of int32 ranks, of doubles.
EXTREMES = [
    "-1", "0", "-0.0005", "1e400", "-1e400", "1e-400", "9223372036854775807", "-9223372036854775808",
    "9223372036854775.807", "9223372036854775808", "18446744073709551616", "2147483648", "4294967295",
    "12345678901234567890123", "1.5e15", "0.0004", "-9223372036854775809",
]
SWAPS = ['"x"', "null", "[]", "{}", "true", '"12"', '""', '{"a": [1, {"b": null}]}']
FIELDS = ["ts", "dur", "rank", "stream", "device", "correlation", "pid", "baseTimeNanoseconds", "world_size"]
NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def _corpus() -> list[tuple[str, bytes]]:
    out = []
    for rel in CORPUS:
        path = locate("kineto", *rel.split("/"))
        if path is not None:
            out.append((rel, gzip.decompress(path.read_bytes())))
    return out


def _mutate(rng: random.Random, doc: bytes) -> tuple[str, bytes, bool]:
    """(what was done, the bytes, whether to gzip them)."""
    op = rng.choice(["truncate", "flip", "swap", "extreme", "number", "step", "gzip"])
    if op == "truncate":
        at = rng.randrange(len(doc))
        return f"truncate at {at}", doc[:at], rng.random() < 0.5
    if op == "flip":
        b = bytearray(doc)
        spots = [rng.randrange(len(b)) for _ in range(rng.choice([1, 1, 2, 8]))]
        for at in spots:
            b[at] = rng.randrange(256)
        return f"flip {spots}", bytes(b), rng.random() < 0.3
    if op in ("swap", "extreme"):
        field = rng.choice(FIELDS)
        hits = [m.start() for m in re.finditer(rb'"%s"\s*:\s*' % field.encode(), doc)]
        if not hits:
            return "unchanged", doc, False
        at = rng.choice(hits)
        m = re.compile(rb'"%s"\s*:\s*' % field.encode()).match(doc, at)
        assert m is not None
        start = m.end()
        end = _value_end(doc, start)
        new = rng.choice(SWAPS if op == "swap" else EXTREMES).encode()
        return f"{op} {field} at {start} -> {new!r}", doc[:start] + new + doc[end:], rng.random() < 0.3
    if op == "number":
        nums = list(NUMBER.finditer(doc))
        m = rng.choice(nums)
        new = rng.choice(EXTREMES).encode()
        return f"number at {m.start()} -> {new!r}", doc[:m.start()] + new + doc[m.end():], False
    if op == "step":
        # a ProfilerStep whose number does not fit int64, or a rank that is not int32
        new = rng.choice([b'"ProfilerStep#99999999999999999999"', b'"ProfilerStep#-3"', b'"ProfilerStep#"'])
        m = re.search(rb'"ProfilerStep#\d+"', doc)
        if m is None:
            return "unchanged", doc, False
        return f"step name -> {new!r}", doc[:m.start()] + new + doc[m.end():], False
    # damage the gzip stream itself
    packed = bytearray(gzip.compress(doc, mtime=0))
    at = rng.randrange(len(packed))
    packed[at] ^= 1 << rng.randrange(8)
    return f"gzip bit at {at}", bytes(packed), False


def _value_end(doc: bytes, i: int) -> int:
    """End of the JSON scalar (or a bracketed value, shallowly) starting at ``i``."""
    if doc[i:i + 1] == b'"':
        j = doc.find(b'"', i + 1)
        return len(doc) if j < 0 else j + 1
    if doc[i:i + 1] in (b"{", b"["):
        close = b"}" if doc[i:i + 1] == b"{" else b"]"
        j = doc.find(close, i)
        return len(doc) if j < 0 else j + 1
    j = i
    while j < len(doc) and doc[j:j + 1] not in (b",", b"}", b"]", b" ", b"\n"):
        j += 1
    return j


def _check_conserved(run: pau.Run) -> None:
    events, spans = run.events, run.spans
    if events is None or events.num_rows == 0:
        return
    ex = pau.core.classify(events, span=spans)
    total = {r["rank"]: r["duration_ns_sum"] for r in ex.group_by("rank").aggregate([("duration_ns", "sum")]).to_pylist()}
    for s in spans.to_pylist():
        if pc.any(pc.equal(events["rank"], s["rank"])).as_py():
            assert total[s["rank"]] == s["end_ns"] - s["start_ns"], s


def test_kineto_mutations_give_a_result_or_a_pau_error(tmp_path):
    corpus = _corpus()
    if not corpus:
        pytest.skip("no Kineto sample found")
    rng = random.Random(SEED)
    outcomes = {"ok": 0, "refused": 0}
    for case in range(CASES):
        name, doc = corpus[case % len(corpus)]
        what, data, gz = _mutate(rng, doc)
        if gz:
            data = gzip.compress(data, mtime=0)
        path = tmp_path / f"case{case}.json{'.gz' if gz else ''}"
        path.write_bytes(data)
        t0 = time.perf_counter()
        try:
            run = pau.read(path, format="kineto")
            _check_conserved(run)
            outcomes["ok"] += 1
        except PauError as exc:
            # a reader's refusal names the file it refuses
            assert str(path) in str(exc), f"case {case} ({name}: {what}): {type(exc).__name__}: {exc}"
            outcomes["refused"] += 1
        except Exception as exc:  # the rule under test: nothing but pau.errors
            pytest.fail(f"case {case} ({name}: {what}): {type(exc).__name__}: {exc}")
        finally:
            path.unlink()
        assert time.perf_counter() - t0 < SLOW_S, f"case {case} ({name}: {what}) took too long"
    # the mutations reach both outcomes (a fuzzer that only ever fails tests nothing)
    assert outcomes["ok"] > CASES // 10 and outcomes["refused"] > CASES // 10, outcomes
