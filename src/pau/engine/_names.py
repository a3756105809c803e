"""Names the command line needs before anything heavy is imported.

This module imports nothing, so that ``pau --help`` and ``pau --version`` answer without
loading numpy, pyarrow or Numba (``pau._args``). The modules that own these names
(``pau.run``, ``pau.figures.align``, ``pau.figures.compare``) take them from here.
"""

from __future__ import annotations

__all__ = ["ALIGN_METHODS", "INPUT_FORMATS", "TOP_KERNELS"]

#: The input formats :func:`pau.read` knows; ``pau`` is pau's own run layout (a folder).
INPUT_FORMATS = ("pau", "parquet", "kineto", "nsys", "mllog", "serving", "csv")
#: The ways :mod:`pau.figures.align` puts ranks' clocks on one.
ALIGN_METHODS = ("collectives",)
#: Rows of the top-kernels table (and of the kernel diff's text) by default.
TOP_KERNELS = 10
