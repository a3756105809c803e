"""Figures computed the way other tools compute them, for side-by-side checks.

* :mod:`pau.compat.hta`: Holistic Trace Analysis 0.5.0's temporal breakdown, idle
  time breakdown and communication/computation overlap.
* :mod:`pau.compat.ml_goodput`: ml-goodput-measurement's goodput and badput breakdown
  from its log entries, beside pau's ledger of the same records (``docs/ml-goodput.md``).

These reproduce another tool's definitions, rounding included; pau's own figures
(:mod:`pau.core`) are exact and are the ones to report. ``docs/kineto.md`` explains
every difference.
"""

from __future__ import annotations

__all__ = ["hta", "ml_goodput"]
