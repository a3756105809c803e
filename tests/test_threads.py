"""One module decides threads for the whole process (pau.engine._threads), from the cores
the process may use: its CPU affinity mask, not the machine's core count."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import pau.core as pc
from pau import _core, synth
from pau.engine import _crossing, _threads


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")
def test_a_process_pinned_to_one_core_uses_one():
    code = (
        "import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})\n"
        "import pau.core as pc, pau.engine._crossing as x, pau.engine._threads as t, pau.synth as s\n"
        "assert t.cores() == 1 and x._CORES == 1\n"
        "assert t.thread_count(None, 10**9) == 1\n"
        "job = s.training_job(ranks=2, steps=20, seed=0)\n"
        "pc.ledger(job.events, job.lifecycle)\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_cores_is_the_affinity_mask():
    if hasattr(os, "sched_getaffinity"):
        assert _threads.cores() == len(os.sched_getaffinity(0))
    assert _threads.thread_count(None, 10) == 1
    assert _threads.thread_count(None, 10**9) == min(_threads.cores(), _threads.MAX_THREADS)
    assert _threads.thread_count(3, 10) == 3
    with pytest.raises(ValueError, match="threads"):
        _threads.thread_count(0, 10)


def test_the_native_pool_is_sized_once(monkeypatch):
    """pau.engine._crossing sizes the native pool from pau.engine._threads at import; once the pool
    runs, it keeps its size."""
    monkeypatch.setattr(_crossing, "OVERLAP_MIN_ROWS", 0)  # sweep on the helpers even when small
    job = synth.training_job(ranks=2, steps=20, seed=0)
    pc.ledger(job.events, job.lifecycle)
    assert _core.set_pool_cores(64) is False
