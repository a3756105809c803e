"""Types shared by every layer: the quarantine result, ``on_invalid``, table-like inputs.

Imports nothing of pau but :mod:`pau.errors`.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, Union

import pyarrow as pa

from .errors import PauError

__all__ = ["OnInvalid", "Quarantined", "TableLike", "check_on_invalid"]

#: What to do with input rows pau cannot use: raise (the default) or set them aside.
OnInvalid = Literal["raise", "quarantine"]

#: A table-like input: a ``pyarrow.Table``/``RecordBatch``/``RecordBatchReader``,
#: anything with ``__arrow_c_stream__``, a pandas ``DataFrame`` or a dict of arrays.
TableLike = Union[pa.Table, pa.RecordBatch, pa.RecordBatchReader, "dict[str, Any]", Any]


class Quarantined(NamedTuple):
    """What ``on_invalid="quarantine"`` returns: the result and the rows set aside.

    ``quarantine`` has the columns that were read (all of a table's; the event
    columns of a streamed file) plus ``row`` (0-based row in the input) and ``reason``.
    """

    result: Any
    quarantine: pa.Table


def check_on_invalid(on_invalid: str) -> None:
    """Raise :class:`pau.errors.PauError` unless ``on_invalid`` is ``"raise"`` or
    ``"quarantine"``."""
    if on_invalid not in ("raise", "quarantine"):
        raise PauError(f"on_invalid: expected 'raise' or 'quarantine', got {on_invalid!r}")
