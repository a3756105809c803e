"""How many examples each Hypothesis property test runs.

Every ``@settings(max_examples=...)`` in tests/ goes through :func:`examples`, so one
environment variable sets the depth of every property test:

    PAU_PROPERTY_SCALE=0.2 python -m pytest tests   # a quick run: a fifth of the examples
    PAU_PROPERTY_SCALE=20 python -m pytest tests    # a deep run: 20x the examples

Unset, the scale is 1 and each test runs the number of examples written in it (what
CI runs). The fuzzers (tests/fuzz.py, tests/test_fuzz_*.py) count their cases with
their own variable, ``PAU_FUZZ_CASES``.
"""

from __future__ import annotations

import math
import os

#: The environment variable that scales every property test's examples.
VARIABLE = "PAU_PROPERTY_SCALE"


def _scale() -> float:
    """The scale from the environment: a positive, finite number (1 when unset or empty).

    A value that is not one raises here, when the first test module imports this one,
    so a mistyped deep run fails at collection instead of quietly running the CI depth.
    """
    text = os.environ.get(VARIABLE, "").strip()
    if not text:
        return 1.0
    try:
        scale = float(text)
    except ValueError:
        scale = math.nan
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"{VARIABLE} must be a positive number (such as 0.2 or 20), not {text!r}")
    return scale


#: The factor every test's number of examples is multiplied by.
SCALE = _scale()


def examples(n: int) -> int:
    """``n`` examples scaled by ``PAU_PROPERTY_SCALE``, rounded, and at least 1."""
    return max(1, round(n * SCALE))
