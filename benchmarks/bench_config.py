"""Sizes and seeds of the benchmark suites, from the environment.

``PAU_BENCH_SCALE`` (float, default 1.0)
    Multiplies every event count (1M, 10M, the 10M-event file, the 5M/50M memory
    files), e.g. ``0.01`` for a quick run.
``PAU_BENCH_BIG_EVENTS`` (int, default ``50_000_000 * PAU_BENCH_SCALE``)
    Events of the big file of the memory test.
"""

from __future__ import annotations

import os

SEED = 20240611


class ConfigError(ValueError):
    """A PAU_BENCH_* environment variable has an unusable value."""


def scale() -> float:
    raw = os.environ.get("PAU_BENCH_SCALE", "1.0")
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"PAU_BENCH_SCALE: expected a float, got {raw!r}") from None
    if not value > 0:
        raise ConfigError(f"PAU_BENCH_SCALE: must be > 0, got {raw!r}")
    return value


def scaled(n: int) -> int:
    """``n`` events times ``PAU_BENCH_SCALE`` (at least 1,000)."""
    return max(1_000, int(round(n * scale())))


def big_events() -> int:
    raw = os.environ.get("PAU_BENCH_BIG_EVENTS")
    if raw is None:
        return scaled(50_000_000)
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        raise ConfigError(f"PAU_BENCH_BIG_EVENTS: expected an int, got {raw!r}") from None
    if value < 1_000:
        raise ConfigError(f"PAU_BENCH_BIG_EVENTS: must be >= 1000, got {raw!r}")
    return value


def events_label(n: int) -> str:
    """``1000000`` -> ``"1M"``, ``50000`` -> ``"50k"``."""
    if n >= 1_000_000:
        return f"{n / 1e6:g}M"
    return f"{n / 1e3:g}k"


def timed(config) -> bool:
    """Whether this pytest run times benchmarks (not ``--benchmark-disable``, as in CI,
    where each runs once and only its answer is checked, so suites may shrink)."""
    return bool(config.getoption("benchmark_enable") or not config.getoption("benchmark_disable"))
