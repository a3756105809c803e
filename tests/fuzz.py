"""Mutations for the reader fuzz tests (``tests/test_fuzz_readers.py``; the Kineto reader
has its own in ``tests/test_fuzz_kineto.py``).

Every mutation is a pure function of a ``random.Random`` and the input, so a case is
reproduced from its seed alone. :func:`run_case` holds each case to the rule of the
suite: the reader returns (and the test then checks the figures) or raises a
:class:`pau.errors.PauError`; any other exception, or a case running past its time
limit (a hang), fails the test with the case's name.

``PAU_FUZZ_CASES`` (an int) sets how many cases each test runs; the default keeps the
whole file under a minute on two cores.
"""

from __future__ import annotations

import os
import random
import re
import signal
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from pau.errors import PauError

#: Cases per test unless ``PAU_FUZZ_CASES`` says otherwise.
DEFAULT_CASES = 200

#: Seconds one case may take before it counts as a hang.
CASE_SECONDS = 30


def cases(default: int = DEFAULT_CASES) -> int:
    raw = os.environ.get("PAU_FUZZ_CASES")
    return int(raw) if raw else default


#: Values that break readers written for well-formed input: wrong JSON types, numbers
#: at and past the int64 edges, non-finite numbers, deep nesting.
EXTREME_JSON = (
    "null", "true", '"x"', '""', "[]", "{}", "0", "-1", "-0.0", "1e300", "-1e300", "1e-300", "NaN",
    "Infinity", "-Infinity", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
    "18446744073709551616", "123456789012345678901234567890", "0.1e400", "1" * 400,
    "[" * 5000 + "]" * 5000,
)

#: Values for a SQLite cell: wrong types, int64 edges, a REAL where an INTEGER belongs.
EXTREME_SQL: tuple[Any, ...] = (
    None, "12abc", "", b"\x00\xff", 0.5, 1e300, -1e300, float("inf"), -(2**63), 2**63 - 1, -1, 0,
    2**62, 4294967295,
)

_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_JSON_VALUE = re.compile(rb'(:\s*)(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"[^"\\]{0,80}"|null|true|false)')


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def flip_bits(rng: random.Random, data: bytes, n: int | None = None) -> bytes:
    out = bytearray(data)
    for _ in range(n or rng.choice((1, 1, 2, 8))):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def flip_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice((1, 4, 16))):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def splice(rng: random.Random, data: bytes) -> bytes:
    """Cut a slice out, or repeat one (lines lost or doubled)."""
    a = rng.randrange(len(data))
    b = min(len(data), a + rng.choice((1, 10, 200, 5000)))
    return data[:a] + data[b:] if rng.random() < 0.5 else data[:b] + data[a:b] + data[b:]


def swap_json_value(rng: random.Random, data: bytes) -> bytes:
    """Replace one JSON value (a number, a short string, a literal after a ``:``) with a
    value of another type or an extreme number."""
    spots = [m for m in _JSON_VALUE.finditer(data, rng.randrange(max(len(data) - 4096, 1)))][:64]
    if not spots:
        return flip_bits(rng, data)
    m = rng.choice(spots)
    value = rng.choice(EXTREME_JSON).encode()
    return data[: m.start(2)] + value + data[m.end(2):]


def extreme_number(rng: random.Random, data: bytes) -> bytes:
    """Replace one number anywhere with an extreme one (times, counts, ids)."""
    spots = [m for m in _NUMBER.finditer(data, rng.randrange(max(len(data) - 4096, 1)))][:64]
    if not spots:
        return flip_bits(rng, data)
    m = rng.choice(spots)
    value = rng.choice([v for v in EXTREME_JSON if v[0] in "-0123456789" or v in ("NaN", "Infinity")])
    return data[: m.start()] + value.encode() + data[m.end():]


BYTE_MUTATIONS: tuple[Callable[[random.Random, bytes], bytes], ...] = (
    truncate, flip_bits, flip_bytes, splice)
TEXT_MUTATIONS: tuple[Callable[[random.Random, bytes], bytes], ...] = (
    truncate, flip_bits, flip_bytes, splice, swap_json_value, swap_json_value, extreme_number, extreme_number)


class Hang(Exception):
    """A case ran past :data:`CASE_SECONDS`."""


@contextmanager
def time_limit(seconds: float = CASE_SECONDS) -> Iterator[None]:
    def fire(signum: int, frame: Any) -> None:
        raise Hang(f"no answer after {seconds} s")
    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_case(name: str, fn: Callable[[], Any], *, names: str | None = None) -> Any:
    """``fn()``'s result, or None when it raised a :class:`PauError` (an accepted answer
    to bad input; when ``names`` is given, its message must contain it: a reader's error
    names the file). Any other exception fails, naming the case."""
    try:
        with time_limit():
            return fn()
    except PauError as exc:
        assert names is None or names in str(exc), f"{name}: {type(exc).__name__} does not name {names}: {exc}"
        return None
    except AssertionError:
        raise
    except Exception as exc:  # noqa: BLE001 - the point: any other type is a finding
        raise AssertionError(f"{name}: {type(exc).__name__}: {exc}") from exc
