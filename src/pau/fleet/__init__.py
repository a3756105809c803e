"""Fleets: many runs over time (DESIGN §7, ``docs/fleet.md``).

:func:`ingest` (``pau ingest SOURCE... -o FLEET``) reads runs of any format into a
fleet archive: each run in pau's run layout under its run key, a runs table of their
facts and headline figures, their hourly cells and the refusals; :func:`read_fleet`
opens it as a :class:`Fleet`. The figures over many runs' periods are pure functions of
arrays and tables: :mod:`pau.fleet.changes` (change points), :mod:`pau.fleet.costs` (the
cost basis), :mod:`pau.fleet.reliability` (failure rates by job size) and
:mod:`pau.fleet.place` (one workload on several systems, ranked by cost per trained model).
"""

from __future__ import annotations

from pau.fleet.archive import (CELLS_SCHEMA, FIGURES, FLEET_JOBS_SCHEMA, REFUSALS_SCHEMA, RUNS_SCHEMA, Fleet, read_fleet,
                               run_key)
from pau.fleet.ingester import IngestError, IngestResult, Source, hourly_cells, ingest, sources_of
from pau.fleet.place import Placement, WhatIf, at_scale, placement

__all__ = ["CELLS_SCHEMA", "FIGURES", "FLEET_JOBS_SCHEMA", "REFUSALS_SCHEMA", "RUNS_SCHEMA", "Fleet", "IngestError",
           "IngestResult", "Placement", "Source", "WhatIf", "at_scale", "hourly_cells", "ingest", "placement",
           "read_fleet", "run_key", "sources_of"]
