"""Numba kernels of :mod:`pau.figures.economics`. Pure functions: arrays in, arrays out.

Inputs are validated by :mod:`pau.figures.economics` before they get here. The busy-time
attribution is native (``csrc/core/attrib.hpp``, slow twin in
``tests/reference_econ.py``); the checkpoint Monte Carlo stays here.
"""

from __future__ import annotations

import numpy as np

from pau.engine._jit import kernel


@kernel
def checkpoint_runs(tau, delta, restart, mtbf, segments, runs, seed):
    """Monte Carlo of a run of ``segments`` checkpoint intervals under Poisson failures.

    Each segment is ``tau`` s of work then a ``delta`` s checkpoint and must run
    ``tau + delta`` without a failure; a failure loses the segment so far and is
    followed by a restart of ``restart`` s, which a failure also interrupts (and
    restarts). Failures are exponential with mean ``mtbf``. Returns the wall time
    (s) of each of ``runs`` runs.
    """
    np.random.seed(seed)
    out = np.empty(runs, np.float64)
    seg = tau + delta
    for r in range(runs):
        total = 0.0
        for _ in range(segments):
            while True:
                x = np.random.exponential(mtbf)
                if x >= seg:
                    total += seg
                    break
                total += x
                while True:
                    y = np.random.exponential(mtbf)
                    if y >= restart:
                        total += restart
                        break
                    total += y
        out[r] = total
    return out
