"""pau.compat.ml_goodput against ml-goodput-measurement's own test scenarios.

The scenarios come from the library's ``ml_goodput_measurement/tests/goodput_test.py``
(the release line with custom badput events and without
``INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION``; AI-Hypercomputer/ml-goodput-measurement,
Apache-2.0) and, for elastic training, ``tests/goodput_elastic_test.py``. Each test
names its scenario as ``Class.test_name``. The entries are what the library's recorder
writes for the scenario's program (the helpers below emit them); the expected figures
are the scenario's, checked to the library's stated tolerance (``delta=0.1``: percent
points for goodput and badput, seconds for times; exact where it uses
``assertEqual``), and to the hand-worked exact value of the library's rules.

Where a scenario uses ``datetime.now()`` and ``time.sleep`` (its query time is "now"),
the same offsets are laid from the library's fixed ``_TEST_JOB_START_TIME`` and the
query time is passed explicitly.
"""

from __future__ import annotations

import json

import pytest

from pau import errors
from pau.compat import ml_goodput as mg

# The library's test constants (seconds).
T0 = 1704070800.0           # _TEST_JOB_START_TIME: 2024-01-01 01:00:00 UTC
STARTUP = 5.0               # _TEST_PROGRAM_STARTUP_TIME
TPU = 1.0                   # _TEST_TPU_INIT_TIME
PREP = 2.0                  # _TEST_TRAINING_PREPARATION_TIME
LOAD = 2.0                  # _TEST_DATA_LOADING_TIME
STEPS = 5                   # _TEST_TOTAL_STEPS
STEP = 3.0                  # _TEST_STEP_TIME
EXTRA = 5.0                 # _TEST_FIRST_STEP_EXTRA_TIME
CUSTOM = 10.0               # _TEST_CUSTOM_BADPUT_TIME
DISRUPTION = 5.0            # disruption_time in the disruption scenarios
JOB = "test-run"

TOL = 0.1                   # the library's delta


class Log:
    """The entries the library's GoodputRecorder writes, in the order it writes them."""

    def __init__(self) -> None:
        self.entries: list[dict] = []

    def _w(self, **kw: object) -> None:
        self.entries.append({"job_name": JOB, **kw})

    def job_start(self, t: float) -> None:
        self._w(job_start_time=t)

    def job_end(self, t: float) -> None:
        self._w(job_end_time=t)

    def step(self, n: int, t: float) -> None:
        self._w(step_count=n, step_start_time=t)

    def tpu(self, a: float, b: float) -> None:
        self._w(tpu_init_start_time=a)
        self._w(tpu_init_end_time=b)

    def prep(self, a: float, b: float) -> None:
        self._w(training_prep_start_time=a)
        self._w(training_prep_end_time=b)

    def load(self, a: float, b: float) -> None:
        self._w(data_loading_start_time=a)
        self._w(data_loading_end_time=b)

    def custom(self, a: float, b: float, kind: str) -> None:
        self._w(custom_badput_event_type=kind, custom_badput_event_start_time=a)
        self._w(custom_badput_event_type=kind, custom_badput_event_end_time=b)


def init_prep_load(log: Log, t: float) -> float:
    """tpu init, training preparation and data loading back to back from t (the
    BadputTest scenarios); returns the first step's start."""
    log.tpu(t, t + TPU)
    log.prep(t + TPU, t + TPU + PREP)
    log.load(t + TPU + PREP, t + TPU + PREP + LOAD)
    return t + TPU + PREP + LOAD


def steps_with_extra(log: Log, first: int, last: int, t: float) -> float:
    """Steps first..last-1 from t, the first one EXTRA longer; returns the next start."""
    for s in range(first, last):
        log.step(s, t)
        t += STEP + (EXTRA if s == first else 0.0)
    return t


def approx(x: float) -> object:
    return pytest.approx(x, rel=1e-12, abs=1e-9)


# ---------------------------------------------------------------------------
# goodput_test.py: GoodputTest
# ---------------------------------------------------------------------------


def sample_program() -> list[dict]:
    """GoodputTest._mock_sample_program: 5 steps of 3 s after 5 s of startup."""
    log = Log()
    log.job_start(T0)
    for s in range(STEPS):
        log.step(s, T0 + STARTUP + STEP * s)
    log.job_end(T0 + STARTUP + STEP * STEPS)
    return log.entries


def test_goodput_calculator():
    """GoodputTest.test_goodput_calculator: 15 s of steps in 20 s, exactly 75 %
    (the library asserts equality), last step 4."""
    goodput, breakdown, last = mg.get_job_goodput(sample_program())
    assert goodput == 75.0
    assert breakdown == {}
    assert last == STEPS - 1


def test_goodput_with_startup_badput():
    """GoodputTest.test_goodput_with_startup_badput: the first step takes 5 s extra,
    which the library charges to program startup: 15 s of 25 s."""
    log = Log()
    log.job_start(T0)
    end = steps_with_extra(log, 0, STEPS, T0 + STARTUP)
    log.job_end(end)
    total = STARTUP + STEP * STEPS + EXTRA
    assert end == T0 + total
    goodput, breakdown, _ = mg.get_job_goodput(log.entries, include_badput_breakdown=True)
    assert goodput == pytest.approx(STEPS * STEP / total * 100, abs=TOL)
    assert goodput == approx(60.0)
    assert breakdown["PROGRAM_STARTUP"] == approx(EXTRA / total * 100)


# ---------------------------------------------------------------------------
# GoodputDisruptionCompleteRestartTest / GoodputDisruptionPartialRestartTest
# ---------------------------------------------------------------------------


def restart_program(restart_from: int, steps_after: int, *, extra: bool = False) -> tuple[list[dict], float]:
    """5 steps, a 5 s disruption, a restart with 5 s of startup, then steps
    restart_from.. (steps_after of them); no job end. Returns the entries and the
    time of the last step start."""
    log = Log()
    log.job_start(T0)
    t = T0 + STARTUP
    if extra:
        t = steps_with_extra(log, 0, STEPS, t)
    else:
        for s in range(STEPS):
            log.step(s, t)
            t += STEP
    restart = t + DISRUPTION
    log.job_start(restart)
    t = restart + STARTUP
    last = t
    for s in range(restart_from, restart_from + steps_after):
        log.step(s, t)
        last = t
        t += STEP + (EXTRA if extra and s == restart_from else 0.0)
    return log.entries, last


def test_disruption_complete_restart():
    """GoodputDisruptionCompleteRestartTest.test_goodput_calculator: the job restarts
    from step 0 and logs steps 0-2; queried 2 s after the last step start. Goodput is
    2 steps (6 s) over 38 s."""
    entries, last = restart_program(0, STEPS - 2)
    total = STARTUP + STEP * STEPS + DISRUPTION + STARTUP + (STEPS - 2 - 1) * STEP
    assert last == T0 + total
    query = total + 2
    goodput, _, _ = mg.get_job_goodput(entries, query_time=T0 + query)
    assert goodput == pytest.approx((STEPS - 2 - 1) * STEP / query * 100, abs=TOL)
    assert goodput == approx(6 / 38 * 100)


def test_disruption_partial_restart():
    """GoodputDisruptionPartialRestartTest.test_goodput_calculator: restart from step
    2 (steps 2-4 logged again); productive 4 steps = 12 s (the library checks its
    cached productive time too), queried at 41 s."""
    entries, last = restart_program(2, STEPS - 2)
    total = STARTUP + STEP * STEPS + DISRUPTION + STARTUP + (STEPS - 2) * STEP
    query = total + 2
    d = mg.job_goodput_details(entries, query_time=T0 + query)
    assert d.productive_time == pytest.approx((STEPS - 1) * STEP, abs=TOL)
    assert d.productive_time == approx(12.0)
    assert d.goodput == pytest.approx((STEPS - 1) * STEP / query * 100, abs=TOL)
    assert d.disruptions == 1
    # the disrupted run's steps 2-3 (6 s) and the 8 s from step 4's start to the restart
    assert d.unproductive_time["WASTED_PROGRESS_FROM_DISRUPTION"] == approx(14.0)


def test_disruption_partial_restart_startup_badput():
    """GoodputDisruptionPartialRestartTest.test_goodput_with_startup_badput: both runs'
    first steps take 5 s extra; productive stays 4 steps (12 s) of 51 s."""
    entries, _ = restart_program(2, STEPS - 2, extra=True)
    total = (STARTUP + STEP * STEPS + EXTRA + DISRUPTION + STARTUP + (STEPS - 2) * STEP + EXTRA)
    query = total + 2
    d = mg.job_goodput_details(entries, query_time=T0 + query)
    assert d.goodput == pytest.approx((STEPS - 1) * STEP / query * 100, abs=TOL)
    assert d.productive_time == approx(12.0)
    assert d.unproductive_time["PROGRAM_STARTUP"] == approx(2 * EXTRA)


# ---------------------------------------------------------------------------
# BadputTest
# ---------------------------------------------------------------------------


def test_badput_tpu_initialization():
    """BadputTest.test_badput_calculator_tpu_initialization: 1 s of 21 s."""
    log = Log()
    log.job_start(T0)
    log.tpu(T0, T0 + TPU)
    for s in range(STEPS):
        log.step(s, T0 + TPU + STARTUP + STEP * s)
    total = TPU + STARTUP + STEP * STEPS
    log.job_end(T0 + total)
    _, b, _ = mg.get_job_goodput(log.entries, include_badput_breakdown=True)
    assert b["TPU_INITIALIZATION"] == pytest.approx(TPU / total * 100, abs=TOL)
    assert b["TPU_INITIALIZATION"] == approx(100 / 21)


def test_badput_training_preparation():
    """BadputTest.test_badput_calculator_training_preparation: 2 s of 18 s."""
    log = Log()
    log.job_start(T0)
    log.tpu(T0, T0 + TPU)
    log.prep(T0 + TPU, T0 + TPU + PREP)
    for s in range(STEPS):
        log.step(s, T0 + TPU + PREP + STEP * s)
    total = TPU + PREP + STEP * STEPS
    log.job_end(T0 + total)
    _, b, _ = mg.get_job_goodput(log.entries, include_badput_breakdown=True)
    assert b["TRAINING_PREP"] == pytest.approx(PREP / total * 100, abs=TOL)
    assert b["TRAINING_PREP"] == approx(200 / 18)


def test_badput_sync_data_loading():
    """BadputTest.test_badput_calculator_sync_data_loading: the first data loading
    (2 s of 20 s) blocks; both data loading buckets are reported."""
    log = Log()
    log.job_start(T0)
    t = init_prep_load(log, T0)
    for s in range(STEPS):
        log.step(s, t + STEP * s)
    total = TPU + PREP + LOAD + STEP * STEPS
    log.job_end(T0 + total)
    _, b, _ = mg.get_job_goodput(log.entries, include_badput_breakdown=True)
    assert b["DATA_LOADING_SYNC"] == pytest.approx(LOAD / total * 100, abs=TOL)
    assert b["DATA_LOADING_SYNC"] == approx(10.0)
    assert b["DATA_LOADING_ASYNC"] == 0.0


def test_badput_async_data_loading():
    """BadputTest.test_badput_calculator_async_data_loading: a 2 s loading after each
    3 s step is asynchronous: 10 s of 30 s; it is not badput, so goodput counts it."""
    log = Log()
    log.job_start(T0)
    t = init_prep_load(log, T0)
    for s in range(STEPS):
        log.step(s, t)
        log.load(t + STEP, t + STEP + LOAD)
        t += STEP + LOAD
    total = TPU + PREP + LOAD + (STEP + LOAD) * STEPS
    log.job_end(T0 + total)
    g, b, _ = mg.get_job_goodput(log.entries, include_badput_breakdown=True)
    assert b["DATA_LOADING_ASYNC"] == pytest.approx(LOAD * STEPS / total * 100, abs=TOL)
    assert b["DATA_LOADING_SYNC"] == approx(LOAD / total * 100)
    assert g == approx(25 / 30 * 100)


def test_badput_program_startup():
    """BadputTest.test_badput_calculator_program_startup: 5 s of 25 s."""
    log = Log()
    log.job_start(T0)
    t = init_prep_load(log, T0)
    end = steps_with_extra(log, 0, STEPS, t)
    total = TPU + PREP + LOAD + EXTRA + STEP * STEPS
    assert end == T0 + total
    log.job_end(end)
    _, b, _ = mg.get_job_goodput(log.entries, include_badput_breakdown=True)
    assert b["PROGRAM_STARTUP"] == pytest.approx(EXTRA / total * 100, abs=TOL)
    assert b["PROGRAM_STARTUP"] == approx(20.0)


def disrupted_badput_program() -> tuple[Log, float]:
    """The BadputTest disruption program: init, prep, load, 5 steps (first +5 s),
    a 5 s disruption, a restart with tpu/prep/load logged implicitly by offsets only,
    steps 2-4 (first +5 s); returns the log (without job end) and the total time."""
    log = Log()
    log.job_start(T0)
    t = init_prep_load(log, T0)
    t = steps_with_extra(log, 0, STEPS, t)
    restart = t + DISRUPTION
    log.job_start(restart)
    t = restart + TPU + PREP + LOAD
    steps_with_extra(log, 2, STEPS, t)
    total = (TPU + PREP + LOAD + EXTRA + STEP * STEPS + DISRUPTION + TPU + PREP + LOAD + EXTRA
             + (STEPS - 2) * STEP)
    return log, total


def test_badput_program_startup_with_disruptions():
    """BadputTest.test_badput_calculator_program_startup_with_disruptions: two runs,
    5 s of startup each: 10 s of 49 s."""
    log, total = disrupted_badput_program()
    log.job_end(T0 + total)
    _, b, _ = mg.get_job_goodput(log.entries, include_badput_breakdown=True)
    assert b["PROGRAM_STARTUP"] == pytest.approx(2 * EXTRA / total * 100, abs=TOL)
    assert b["PROGRAM_STARTUP"] == approx(1000 / 49)


def test_data_loading_counted_twice_across_a_restart():
    """The library's rules on the same program (not asserted upstream): at the restart
    the last data loading is added to DATA_LOADING_SYNC again (4 s of 2 s logged), so
    DATA_LOADING_ASYNC comes out at -2 s and is sanitized to 0."""
    log, total = disrupted_badput_program()
    log.job_end(T0 + total)
    d = mg.job_goodput_details(log.entries)
    assert d.unproductive_time["DATA_LOADING_SYNC"] == 2 * LOAD
    assert d.unproductive_time["DATA_LOADING_ASYNC"] == 0.0
    assert d.sanitized == ("DATA_LOADING_ASYNC",)
    # OTHER: 49 - 15 productive - (4 + 10 + 14 + 1 + 2) = 3 s
    assert d.unproductive_time["OTHER"] == approx(3.0)


def test_badput_wasted_progress_and_disruptions():
    """BadputTest.test_badput_calculator_wasted_progress_and_disruptions: the
    disruption plus 3 steps' worth (14 s) of 49 s."""
    log, total = disrupted_badput_program()
    log.job_end(T0 + total)
    g, b, last = mg.get_job_goodput(log.entries, include_badput_breakdown=True)
    assert b["WASTED_PROGRESS_FROM_DISRUPTION"] == pytest.approx(
        (DISRUPTION + (STEPS - 2) * STEP) / total * 100, abs=TOL)
    assert b["WASTED_PROGRESS_FROM_DISRUPTION"] == approx(1400 / 49)
    assert g == approx(1500 / 49)
    assert last == 4


def test_badput_unknown():
    """BadputTest.test_badput_calculator_unknown_badput: 5 s nobody logged end up in
    OTHER (5 s of 26 s; the library checks the cached 5 s too)."""
    log = Log()
    log.job_start(T0)
    log.tpu(T0, T0 + TPU)
    for s in range(STEPS):
        log.step(s, T0 + TPU + STARTUP + STEP * s)
    unknown = 5.0
    total = TPU + STARTUP + STEP * STEPS + unknown
    log.job_end(T0 + total)
    d = mg.job_goodput_details(log.entries)
    assert d.badput["OTHER"] == pytest.approx(unknown / total * 100, abs=TOL)
    assert d.unproductive_time["OTHER"] == pytest.approx(unknown, abs=TOL)
    # The library's rules: the last step runs to the job end (8 s), so the 5 s it
    # reports as unknown are in fact the startup before step 0.
    assert d.productive_time == approx(20.0)
    assert d.unproductive_time["OTHER"] == approx(5.0)


def save_stats() -> dict:
    """BadputTest.test_badput_calculator_checkpoint_badput's MockSaveStepStatistics."""
    return {"step": 1, "event_type": "save", "directory": "gs://bucket/path", "reached_preemption": True,
            "preemption_received_at": 10.0, "synchronous": True, "wait_for_prev_start_time": 10.0,
            "wait_for_prev_duration_secs": 1.0, "checkpointer_blocking_start_time": 12.0,
            "checkpointer_blocking_duration_secs": 2.0, "get_old_steps_start_time": 13.0,
            "get_old_steps_duration_secs": 3.0, "checkpoint_manager_blocking_start_time": 10.0,
            "checkpoint_manager_blocking_duration_secs": 6.0}


def restore_stats() -> dict:
    """... and its MockRestoreStepStatistics."""
    return {"step": 1, "event_type": "restore", "directory": "gs://bucket/path", "checkpointer_start_time": 10.0,
            "checkpointer_duration_secs": 2.0, "checkpoint_manager_start_time": 10.0,
            "checkpoint_manager_duration_secs": 2.0}


def checkpoint_program() -> tuple[list[dict], float]:
    log = Log()
    log.job_start(T0)
    t = init_prep_load(log, T0)
    t = steps_with_extra(log, 0, STEPS, t)
    log.entries.append(save_stats())
    restart = t + DISRUPTION
    log.job_start(restart)
    steps_with_extra(log, 2, STEPS, restart + TPU + PREP + LOAD)
    total = (TPU + PREP + LOAD + EXTRA + STEP * STEPS + DISRUPTION + TPU + PREP + LOAD + EXTRA
             + (STEPS - 2) * STEP)
    log.entries.append(restore_stats())
    log.job_end(T0 + total)
    return log.entries, total


def test_badput_checkpoint():
    """BadputTest.test_badput_calculator_checkpoint_badput: a 6 s save and a 2 s
    restore (their percent asserted equal), wasted progress as before."""
    entries, total = checkpoint_program()
    _, b, _ = mg.get_job_goodput(entries, include_badput_breakdown=True)
    assert b["WASTED_PROGRESS_FROM_DISRUPTION"] == pytest.approx(
        (DISRUPTION + (STEPS - 2) * STEP) / total * 100, abs=TOL)
    assert b["UNPRODUCTIVE_CHECKPOINT_SAVE_TIME"] == 6.0 / total * 100
    assert b["UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME"] == 2.0 / total * 100


def test_goodput_badput_interval_query():
    """BadputTest.test_goodput_badput_with_interval_query: the whole job, then the
    window that ends before the disruption."""
    log, total = disrupted_badput_program()
    intermediate = T0 + TPU + PREP + LOAD + EXTRA + STEP * STEPS
    log.job_end(T0 + total)
    g, b, last, seconds, disruptions = mg.get_job_goodput_interval(log.entries, T0 - 1e-6, T0 + total)
    assert (last, seconds, disruptions) == (STEPS - 1, total, 1)
    assert g == pytest.approx(STEP * STEPS / total * 100, abs=TOL)
    assert b["WASTED_PROGRESS_FROM_DISRUPTION"] == pytest.approx(
        (DISRUPTION + (STEPS - 2) * STEP) / total * 100, abs=TOL)
    g, b, last, seconds, disruptions = mg.get_job_goodput_interval(log.entries, T0 - 1e-6, intermediate)
    expected_total = TPU + PREP + LOAD + EXTRA + STEP * (STEPS - 1)
    assert (last, seconds, disruptions) == (STEPS - 1, expected_total, 0)
    assert g == pytest.approx(STEP * (STEPS - 1) / expected_total * 100, abs=TOL)
    assert b["WASTED_PROGRESS_FROM_DISRUPTION"] == 0


def custom_program() -> tuple[list[dict], float]:
    log = Log()
    log.job_start(T0)
    log.tpu(T0, T0 + TPU)
    t = T0 + TPU + STARTUP
    for s in range(STEPS):
        log.step(s, t)
        t += STEP
    evaluation = 5.0
    log.custom(t, t + evaluation, "eval_step")
    t += evaluation
    for s in range(STEPS, 2 * STEPS):
        log.step(s, t)
        t += STEP
    total = TPU + STARTUP + STEP * STEPS * 2 + evaluation
    log.job_end(T0 + total)
    return log.entries, total


def test_badput_custom_sync():
    """BadputTest.test_badput_calculator_custom_sync_badput: a 5 s evaluation between
    steps 4 and 5 is custom badput EVAL_STEP; goodput 30 s of 41 s."""
    entries, total = custom_program()
    d = mg.job_goodput_details(entries)
    custom = d.badput["CUSTOM_BADPUT_EVENTS"]
    assert isinstance(custom, dict)
    assert custom["EVAL_STEP"] == pytest.approx(5.0 / total * 100, abs=TOL)
    assert d.goodput == pytest.approx(STEP * STEPS * 2 / total * 100, abs=TOL)
    assert d.unproductive_time["CUSTOM_BADPUT_EVENTS"] == {"EVAL_STEP": pytest.approx(5.0, abs=TOL)}


def test_disruption_and_caching():
    """BadputTest.test_goodput_with_disruption_and_caching. The library is queried
    twice: after the restart (productive: steps 0-3, 12 s), then at the end. Its
    second read takes the entries timed strictly after the last one it cached (the
    restart at 20 s), so step 3, logged at that same instant, is not among them:
    the entries below are the ones the calculator saw. Productive 15 s, wasted 8 s,
    unproductive 11 s of 26 s."""
    log = Log()
    log.job_start(T0)
    for s in range(STEPS):
        log.step(s, T0 + STEP * s)
    restart = T0 + STEP * STEPS + DISRUPTION
    log.job_start(restart)
    first = mg.job_goodput_details(log.entries, query_time=restart)
    assert first.productive_time == pytest.approx(STEP * (STEPS - 1), abs=TOL)
    # step 3 at `restart` is not read; step 4 and the job end are
    log.step(4, restart + STEP)
    total = STEP * STEPS + DISRUPTION + (3 - 1) * STEP
    log.job_end(T0 + total)
    d = mg.job_goodput_details(log.entries)
    assert d.productive_time == approx(STEP * STEPS)
    unproductive = sum(v if isinstance(v, float) else sum(v.values())
                       for k, v in d.unproductive_time.items() if k != "DATA_LOADING_ASYNC")
    assert unproductive == pytest.approx(total - STEP * STEPS, abs=TOL)
    assert d.unproductive_time["WASTED_PROGRESS_FROM_DISRUPTION"] == pytest.approx(DISRUPTION + STEP, abs=TOL)


# ---------------------------------------------------------------------------
# goodput_elastic_test.py
# ---------------------------------------------------------------------------


def test_elastic_buckets():
    """ElasticGoodputCalculatorTest.test_get_current_productive_and_unproductive_time_elastic:
    a 10 s slice-down wait, a 15 s scale-up wait and a 20 s re-initialization that
    holds the TPU initialization and training preparation (so those are 0)."""
    log = Log()
    t0 = 1779926400.0      # 2026-05-28 00:00 UTC
    log.job_start(t0)
    t1, t2 = t0 + 10, t0 + 20
    log._w(elastic_wait_event_type="slice_down", elastic_wait_start_time=t1)
    log._w(elastic_wait_event_type="slice_down", elastic_wait_end_time=t2)
    t3, t4 = t2 + 10, t2 + 25
    log._w(elastic_wait_event_type="scale_up", elastic_wait_start_time=t3)
    log._w(elastic_wait_event_type="scale_up", elastic_wait_end_time=t4)
    t5, t6 = t4 + 10, t4 + 30
    log._w(elastic_reinit_start_time=t5)
    log._w(elastic_reinit_end_time=t6)
    log.tpu(t5 + 2, t5 + 7)
    log.prep(t5 + 10, t5 + 15)
    log.step(0, t6)
    log.step(1, t6 + 10)
    d = mg.job_goodput_details(log.entries, query_time=t6 + 10)
    u = d.unproductive_time
    assert (u["ELASTIC_SLICE_DOWN"], u["ELASTIC_SCALE_UP"], u["ELASTIC_REINITIALIZATION"]) == (10.0, 15.0, 20.0)
    assert (u["TPU_INITIALIZATION"], u["TRAINING_PREP"]) == (0.0, 0.0)
    # without elastic=, the plain GoodputCalculator ignores these entries
    plain = mg.job_goodput_details(log.entries, query_time=t6 + 10, elastic=False)
    assert "ELASTIC_SLICE_DOWN" not in plain.badput
    assert plain.unproductive_time["TPU_INITIALIZATION"] == 5.0


def test_step_deviation():
    """get_step_deviation (hand-worked; the library's own test draws random times):
    step times 3, 3, 4, 30 s; median 3.5, MAD 0.5, so 30 s is an outlier and the ideal
    is the mean of 3, 3, 4."""
    log = Log()
    log.job_start(T0)
    for s, t in enumerate([0, 3, 6, 10, 40]):
        log.step(s, T0 + t)
    dev = mg.get_step_deviation(log.entries)
    ideal = 10 / 3
    assert dev == {0: approx(ideal - 3), 1: approx(ideal - 3), 2: approx(4 - ideal), 3: approx(30 - ideal)}
    assert mg.get_step_deviation(log.entries, configured_ideal_step_time=3.0) == {0: 0.0, 1: 0.0, 2: 1.0, 3: 27.0}


# ---------------------------------------------------------------------------
# pau's ledger of the same entries, side by side
# ---------------------------------------------------------------------------

S = 1_000_000_000


def test_side_by_side_sample_program_agrees():
    """GoodputTest._mock_sample_program: one run, no restart: both count the 15 s
    of steps; the library's OTHER (5 s of startup) is pau's unattributed time."""
    sbs = mg.side_by_side(sample_program())
    assert sbs.goodput() == {"library": 0.75, "pau": 0.75}
    assert sbs.differences == ()
    assert sbs.residual_ns == 0
    assert sbs.pau["state_ns"]["unattributed"] == 5 * S


def test_side_by_side_partial_restart():
    """GoodputDisruptionPartialRestartTest: the library keeps steps 0-1 of the first
    run because the restart logged step 2 again; no checkpoint record says so, so pau
    rolls them back, and the second run's steps are pending (it is still running and
    wrote no durable checkpoint). Library 12 s productive, pau 0."""
    entries, _ = restart_program(2, STEPS - 2)
    query = T0 + 41
    sbs = mg.side_by_side(entries, query_time=query)
    assert sbs.library.productive_time == 12.0
    assert sbs.pau["productive_ns"] == 0
    got = {d.name: d.ns for d in sbs.differences}
    assert got == {"kept_without_restore": 6 * S, "pending": 6 * S}
    assert sbs.residual_ns == 0
    d = {x.name: x for x in sbs.differences}
    assert d["kept_without_restore"].share == pytest.approx(6 / 41)
    assert (d["kept_without_restore"].library, d["kept_without_restore"].pau) == ("productive", "rolled_back")
    # pau's ledger of the same 41 s: run 1 (5 s startup, 15 s of steps, the last one
    # cut at its start), 10 s outage... exactly:
    st = sbs.pau["state_ns"]
    assert st["rolled_back"] == 12 * S           # steps 0-3 of run 1; step 4 ends where it starts
    assert st["recovery.outage"] == 8 * S        # from step 4's start (the last record) to the restart
    assert st["pending"] == 11 * S               # steps 2-4 of run 2, the last in flight to the query
    assert st["unattributed"] == 10 * S          # the two 5 s startups
    assert sum(st.values()) == 41 * S
    assert sbs.pau["badput_by_cause_ns"] == {"disruption": 12 * S}


def checkpointed_restart() -> tuple[list[dict], float]:
    """The BadputTest disruption program with the save and restore statistics at
    times inside the job (the published scenario's are at 10 s after 1970, see
    test_checkpoint_times_outside_the_job): a synchronous 1 s save of step 1 one second
    into step 2 (16-19 s), a 2 s restore of it one second after the restart."""
    log, total = disrupted_badput_program()
    entries = log.entries
    t_step2 = T0 + TPU + PREP + LOAD + STEP + EXTRA + STEP
    save = dict(save_stats(), checkpoint_manager_blocking_start_time=t_step2 + 1.0,
                checkpoint_manager_blocking_duration_secs=1.0)
    restart = T0 + TPU + PREP + LOAD + EXTRA + STEP * STEPS + DISRUPTION
    restore = dict(restore_stats(), checkpoint_manager_start_time=restart + TPU)
    i = next(j for j, e in enumerate(entries) if e.get("step_count") == 3)
    entries.insert(i, save)
    i = next(j for j, e in enumerate(entries) if e.get("job_start_time") == restart) + 1
    entries.insert(i, restore)
    entries.append({"job_name": JOB, "job_end_time": T0 + total})
    return entries, total


def test_side_by_side_checkpointed_restart():
    """With the checkpoint logged, pau keeps steps 0-1 too: the rollback both see.
    What is left between them: the library takes 5 s of startup out of each run's
    first step (pau keeps the whole step), and subtracts the 1 s save from productive
    time although it ran during step 2, which it counts as wasted."""
    entries, total = checkpointed_restart()
    sbs = mg.side_by_side(entries)
    # library: run 1 steps 0-1 (8 + 3 - 5 startup), run 2 steps 2-4 (8 + 3 - 5, + 3 to
    # the job end), minus the save: 6 + 9 - 1 = 14 s
    assert sbs.library.productive_time == approx(14.0)
    # pau: run 1 steps 0-1 (8 + 3) and run 2 steps 2-4 (8 + 3 + 3): 25 s
    assert sbs.pau["productive_ns"] == 25 * S
    got = {d.name: d.ns for d in sbs.differences}
    assert got == {"checkpoint_save": -1 * S, "program_startup": -10 * S}
    assert sbs.residual_ns == 0
    st = sbs.pau["state_ns"]
    assert st["checkpoint"] == 1 * S                 # on the lineage, though inside rolled-back step 2
    assert st["rolled_back"] == 5 * S                # steps 2-3 of run 1 less the save; step 4 is cut at its start
    assert st["recovery.restore"] == 2 * S
    assert st["recovery.outage"] == 8 * S            # step 4's start (run 1's last record) to the restart
    assert st["initialization"] == 5 * S            # tpu init, preparation, first data loading
    assert st["unattributed"] == 3 * S and st["recovery.reinit"] == 0   # run 2 logged no init phases
    assert sum(st.values()) == total * S
    assert sbs.library.unproductive_time["WASTED_PROGRESS_FROM_DISRUPTION"] == approx(14.0)


def test_side_by_side_named_differences_add_up():
    """The custom-event and async-loading scenarios: the parts add up to the gap."""
    for entries, _ in (custom_program(),):
        sbs = mg.side_by_side(entries)
        gap = round(sbs.library.productive_time * S) - sbs.pau["productive_ns"]
        assert sum(d.ns for d in sbs.differences) + sbs.residual_ns == gap
        assert sbs.differences == ()        # the evaluation is inside a counted window: both take 5 s out
    log = Log()
    log.job_start(T0)
    t = init_prep_load(log, T0)
    for s in range(STEPS):
        log.step(s, t)
        log.load(t + STEP, t + STEP + LOAD)
        t += STEP + LOAD
    log.job_end(t)
    sbs = mg.side_by_side(log.entries)
    assert {d.name: d.ns for d in sbs.differences} == {"data_loading_in_step": 10 * S}
    assert sbs.table().column("name").to_pylist() == ["data_loading_in_step"]


# ---------------------------------------------------------------------------
# The lifecycle table and bad input
# ---------------------------------------------------------------------------


def test_to_lifecycle_records():
    entries, _ = checkpointed_restart()
    t = mg.to_lifecycle(entries)
    rec = t.column("record").to_pylist()
    assert rec.count("attempt") == 2 and rec.count("failure") == 1 and rec.count("accountable") == 1
    assert rec.count("step") == 8 and rec.count("checkpoint_save") == 1 and rec.count("restore") == 1
    rows = t.to_pylist()
    save = next(r for r in rows if r["record"] == "checkpoint_save")
    assert save["durable_ns"] == save["block_end_ns"]   # synchronous: durable when it stops blocking
    kinds = sorted(r["kind"] for r in rows if r["record"] == "phase")
    assert kinds == ["data_warmup", "init", "init"]   # the restart's program logs no phases
    two = mg.to_lifecycle(entries, ranks=2)
    assert [r["rank"] for r in two.to_pylist() if r["record"] == "accountable"] == [0, 1]


def test_checkpoint_times_outside_the_job():
    """The published checkpoint scenario logs its statistics at 10 s (1970): the
    library only sums durations; pau cannot place them: an error naming the entry,
    or with quarantine the two entries set aside."""
    entries, _ = checkpoint_program()
    with pytest.raises(errors.InvalidRowError) as e:
        mg.to_lifecycle(entries)
    assert e.value.column == "checkpoint_manager_blocking_start_time"
    assert e.value.row == next(i for i, x in enumerate(entries) if x.get("event_type") == "save")
    q = mg.to_lifecycle(entries, on_invalid="quarantine")
    assert q.quarantine.column("key").to_pylist() == ["checkpoint_manager_blocking_start_time",
                                                      "checkpoint_manager_start_time"]
    assert "before the job_start_time" in q.quarantine.column("reason")[0].as_py()


@pytest.mark.parametrize("bad, key, words", [
    ({"step_count": 0, "step_start_time": T0 - 1}, "step_start_time", "before the first job_start_time"),
    ({"step_count": 0}, "(entry)", "of no kind"),
    ({"step_count": 0, "step_start_time": None}, "step_start_time", "is null"),
    ({"step_count": 0, "step_start_time": "soon"}, "step_start_time", "not a finite number"),
    ({"step_start_time": T0}, "step_count", "not an integer"),
    ({"job_start_time": T0, "job_end_time": T0}, "(entry)", "several kinds"),
    ({"event_type": "delete"}, "event_type", "not one of"),
    ("text", "(entry)", "not an object"),
])
def test_bad_entries(bad, key, words):
    entries = ([bad] if key == "step_start_time" and "first" in words else []) + sample_program()
    if not (key == "step_start_time" and "first" in words):
        entries.insert(2, bad)
    row = entries.index(bad)
    with pytest.raises(errors.InvalidRowError) as e:
        mg.to_lifecycle(entries)
    assert (e.value.column, e.value.row) == (key, row)
    assert words in str(e.value) and "Fix:" in str(e.value)
    q = mg.to_lifecycle(entries, on_invalid="quarantine")
    assert q.quarantine.column("row").to_pylist() == [row]
    assert q.result.num_rows == mg.to_lifecycle(sample_program()).num_rows


def test_repeated_step_without_restart_is_named():
    """The library reads a repeated step number as a restart; pau needs the restart
    logged (a job_start_time entry)."""
    entries = sample_program()
    entries.insert(4, {"job_name": JOB, "step_count": 1, "step_start_time": T0 + 12})
    with pytest.raises(errors.InvalidRowError, match="not above the step before it") as e:
        mg.to_lifecycle(entries)
    assert (e.value.column, e.value.row) == ("step_count", 4)
    mg.get_job_goodput(entries)   # the library's rules accept it


def test_open_job_needs_query_time_and_no_start_is_an_error():
    entries, _ = restart_program(2, 3)
    with pytest.raises(errors.OptionError, match="query_time"):
        mg.get_job_goodput(entries)
    with pytest.raises(errors.OptionError, match="query_time"):
        mg.to_lifecycle(entries)
    with pytest.raises(errors.OptionError, match="drop query_time"):
        mg.get_job_goodput(sample_program(), query_time=T0 + 100)
    with pytest.raises(errors.OptionError, match="drop query_time"):
        mg.to_lifecycle(sample_program(), query_time=T0 + 100)
    with pytest.raises(errors.PauError, match="no job_start_time"):
        mg.get_job_goodput([e for e in sample_program() if "job_start_time" not in e])


def test_files_and_cloud_logging_shape(tmp_path):
    entries = sample_program()
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n\n")
    assert mg.get_job_goodput(path) == (75.0, {}, 4)
    # gcloud logging read --format=json: newest first; the library reads ascending
    cloud = [{"jsonPayload": e, "timestamp": f"2024-01-01T01:00:{i:02d}.5Z", "insertId": str(i)}
             for i, e in enumerate(entries)][::-1]
    (tmp_path / "log.json").write_text(json.dumps(cloud))
    assert mg.get_job_goodput(tmp_path / "log.json") == (75.0, {}, 4)
    other = [dict(e, job_name="other") for e in entries]
    with pytest.raises(errors.PauError, match="job_name"):
        mg.get_job_goodput(entries + other)
    assert mg.get_job_goodput(entries + other, job_name=JOB) == (75.0, {}, 4)
    (tmp_path / "bad.jsonl").write_text(json.dumps(entries[0]) + "\n{oops\n")
    with pytest.raises(errors.InvalidRowError) as e:
        mg.read_entries(tmp_path / "bad.jsonl")
    assert (e.value.row, e.value.column) == (1, "(line)")
    q = mg.read_entries(tmp_path / "bad.jsonl", on_invalid="quarantine")
    assert q.result == [entries[0]] and q.quarantine.column("row").to_pylist() == [1]
    # the common three columns (the file, "row N": the entry's 0-based line), then row, key, entry
    assert q.quarantine.schema == mg.QUARANTINE_SCHEMA
    assert q.quarantine.select(["source_file", "location", "row", "key"]).to_pylist() == [
        {"source_file": str(tmp_path / "bad.jsonl"), "location": "row 1", "row": 1, "key": "(line)"}]
    with pytest.raises(errors.NoInputError):
        mg.read_entries(tmp_path / "missing.jsonl")


def test_ledger_quarantine_counts_entries():
    entries = sample_program()
    entries.insert(3, {"job_name": JOB, "mystery": 1})
    led = mg.ledger_from_entries(entries, on_invalid="quarantine")
    assert led.lifecycle_quarantine is not None
    assert led.lifecycle_quarantine.column("row").to_pylist() == [3]
    # entries given as a list: no file; the entry's JSON as it was given
    assert led.lifecycle_quarantine.select(["source_file", "location", "key", "entry"]).to_pylist() == [
        {"source_file": None, "location": "row 3", "key": "(entry)", "entry": '{"job_name": "%s", "mystery": 1}' % JOB}]
    assert led.summary()["productive_ns"] == 15 * S


@pytest.mark.parametrize("where, bad, key, words", [
    (3, {"event_type": "restore", "step": 7, "directory": "/ckpt", "checkpoint_manager_start_time": T0 + 6,
         "checkpoint_manager_duration_secs": 1.0}, "step", "restores step 7, which no save entry"),
    (3, {"tpu_init_end_time": T0 + 6}, "tpu_init_end_time", "did not start"),
    (3, {"job_end_time": T0 + 6}, "job_end_time", "earlier than records of its attempt"),
    (3, {"job_end_time": T0 + 9}, "step_start_time", "comes after the job_end_time"),
    (3, {"step_count": 9, "step_start_time": T0 + 1}, "step_start_time", "earlier than records before it"),
])
def test_bad_entries_against_the_others(where, bad, key, words):
    """Entries that contradict the ones around them: only pau's lifecycle needs them
    consistent; the error names the entry that cannot be placed."""
    entries = sample_program()
    entries.insert(where, dict(bad, job_name=JOB))
    with pytest.raises(errors.InvalidRowError) as e:
        mg.to_lifecycle(entries)
    assert e.value.column == key and words in str(e.value)
    q = mg.to_lifecycle(entries, on_invalid="quarantine")
    assert q.quarantine.num_rows >= 1 and q.quarantine.column("key")[0].as_py() == key
