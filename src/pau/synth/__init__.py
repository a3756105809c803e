"""Seeded synthetic inputs for tests, benchmarks and demos: training runs' device events
(DESIGN §2.1), training jobs' lifecycles with failures and checkpoints (DESIGN §2.2),
large lifecycle tables, and fleets of jobs (DESIGN §7).

Every generator is exactly reproducible from its seed. None computes a figure: what pau
must make of an input comes from pau, held in the tests against the slow twins of its
rules (``tests/reference*.py``) or against what the generator planted by construction.

Modules (each documents its model):

* :mod:`pau.synth.trace` -- the events of a multi-rank data-parallel run, step by step
  (:func:`training_run`, :func:`iter_training_run`, :func:`training_run_for_events`);
* :mod:`pau.synth.parquet` -- those events written to Parquet in bounded memory
  (:func:`write_parquet`, :func:`write_training_run`);
* :mod:`pau.synth.job` -- one training job with failures, checkpoints and restarts: its
  lifecycle, events and attempts (:func:`training_job`);
* :mod:`pau.synth.records` -- big lifecycle tables for throughput benchmarks
  (:func:`lifecycle_records`);
* :mod:`pau.synth.fleets` -- a scheduler's jobs over weeks and the profiled jobs'
  lifecycles (:func:`fleet`).
"""

from __future__ import annotations

from pau.synth._common import (
    COMMUNICATION_STREAM,
    COMPUTE_STREAM,
    COPY_STREAM,
    DEFAULT_BUCKETS,
    DEFAULT_KERNELS_PER_STEP,
    DEFAULT_START_NS,
    KINDS,
    lifecycle_schema,
)
from pau.synth.fleets import DEFAULT_FLEET_START_NS, FLEET_SACCT_FIELDS, SyntheticFleet, fleet
from pau.synth.job import TrainingJob, training_job
from pau.synth.parquet import write_parquet, write_training_run
from pau.synth.records import lifecycle_records
from pau.synth.trace import (
    events_schema,
    expected_events,
    iter_training_run,
    steps_for_events,
    training_run,
    training_run_for_events,
)

__all__ = [
    "KINDS",
    "COMPUTE_STREAM",
    "COMMUNICATION_STREAM",
    "COPY_STREAM",
    "DEFAULT_START_NS",
    "DEFAULT_KERNELS_PER_STEP",
    "DEFAULT_BUCKETS",
    "DEFAULT_FLEET_START_NS",
    "FLEET_SACCT_FIELDS",
    "events_schema",
    "training_run",
    "iter_training_run",
    "training_run_for_events",
    "expected_events",
    "steps_for_events",
    "write_parquet",
    "write_training_run",
    "TrainingJob",
    "lifecycle_schema",
    "training_job",
    "lifecycle_records",
    "SyntheticFleet",
    "fleet",
]
