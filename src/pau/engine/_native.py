"""The one place where the native core's errors become :mod:`pau.errors`.

The core (``pau._core``) raises ``ValueError`` for arguments it cannot take, with a
message naming the argument, and ``pau._core.FeedError`` (a ``ValueError`` carrying
``code``, ``row`` and ``batch``) for the first row a sweep of event batches could not
take. :func:`call` runs a native call and turns both into the errors users see:
windows and spans the core rejects (messages that begin "windows" or "span") as :class:`pau.errors.InvalidWindowsError`, rows
out of start order as :class:`pau.errors.UnsortedInputError`, and any other row as
the :class:`pau.errors.InvalidRowError` that names its column, row and fix (the
reasons of the batch's rows, found in Python: :func:`pau.engine._input.raise_first`).
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

import pyarrow as pa

from pau import _core
from pau.engine._input import raise_first, row_reasons
from pau.errors import InvalidWindowsError, PauError, UnsortedInputError

T = TypeVar("T")

#: The core's FeedResult code of a row whose start is before the one fed before it,
#: within its rank (``csrc/core/sweep.hpp``, ``Code::unsorted``).
UNSORTED = 5


def call(fn: Callable[..., T], *args: object, fed: Sequence[pa.RecordBatch | pa.Table] | None = None,
         source: str = "events", **kwargs: object) -> T:
    """``fn(*args, **kwargs)`` with the core's errors as :mod:`pau.errors`.

    ``fed``: the batches a sweep was fed (in its order), so that a
    ``FeedError`` names the column, the row (counted over all batches) and the fix;
    ``source`` the table they are of."""
    try:
        return fn(*args, **kwargs)
    except _core.FeedError as exc:
        raise _feed_error(exc, fed, source) from None
    except ValueError as exc:
        if str(exc).startswith(("windows", "span")):  # "windows: ...", "windows.start_ns: ..."
            raise InvalidWindowsError(str(exc)) from None
        raise


def _feed_error(exc: _core.FeedError, batches: Sequence[pa.RecordBatch | pa.Table] | None,
                source: str) -> PauError:
    code, row, b = int(exc.code), int(exc.row), int(exc.batch)
    if batches is None or not 0 <= b < len(batches):
        return PauError(f"{source}: row {row} of batch {b}: the native sweep could not take it (code {code})")
    row0 = sum(x.num_rows for x in batches[:b])
    batch = batches[b]
    if code == UNSORTED and 0 <= row < batch.num_rows:
        rank = batch.column("rank")[row].as_py()
        return UnsortedInputError(
            f"{source}: column 'start_ns', row {row0 + row}: start_ns decreases within rank {rank}. "
            "Fix: sort the table by (rank, start_ns)")
    reasons = row_reasons(batch, source)
    if reasons.any():
        raise_first(batch, reasons, row0, source)  # raises, naming the first bad row of the batch
    return PauError(f"{source}: row {row0 + row}: the native sweep could not take it (code {code})")
