"""Type stub of pau's private native module (see csrc/). Use pau.core instead."""

import numpy as np
import numpy.typing as npt

__version__: str

class Sweep:
    def __init__(
        self,
        win_rank: npt.NDArray[np.int32],
        win_start: npt.NDArray[np.int64],
        win_end: npt.NDArray[np.int64],
        win_row: npt.NDArray[np.int64],
        span_rank: npt.NDArray[np.int32],
        span_start: npt.NDArray[np.int64],
        span_end: npt.NDArray[np.int64],
        bucket: int = 0,
    ) -> None: ...
    def feed(
        self,
        rank: npt.NDArray[np.int32],
        start: npt.NDArray[np.int64],
        end: npt.NDArray[np.int64],
        kind_idx: npt.NDArray[np.integer],
        kind_map: npt.NDArray[np.int8],
        order: npt.NDArray[np.int64] | None = None,
    ) -> tuple[int, int]: ...
    def finish(self) -> dict[str, np.ndarray]: ...
    @property
    def rank_count(self) -> int: ...

def order_by_rank_start(
    rank: npt.NDArray[np.int32], start: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]: ...

ATTRIB_MAX_WEIGHT: int
ATTRIB_MAX_ROWS: int

def attribute_busy(
    replica: npt.NDArray[np.int32],
    arrival: npt.NDArray[np.int64],
    first_token: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    input_tokens: npt.NDArray[np.int64],
    output_tokens: npt.NDArray[np.int64],
    prefill_weight: int,
    decode_weight: int,
    busy_replica: npt.NDArray[np.int32],
    busy_start: npt.NDArray[np.int64],
    busy_end: npt.NDArray[np.int64],
    n_replicas: int,
) -> tuple[
    npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], tuple[int, int] | None
]:
    """(prefill_ns, decode_ns per request, idle_ns per busy row, overflow); see csrc/core/attrib.hpp."""

def sum_by_key(
    key: npt.NDArray[np.int32],
    value: npt.NDArray[np.int64],
    n_keys: int,
    sub: npt.NDArray[np.int8] | None = None,
    n_sub: int = 1,
) -> npt.NDArray[np.int64]: ...

class KinetoParser:
    """Streaming Chrome-trace (Kineto) tokenizer; see pau.readers.kineto."""

    def __init__(self, device_categories: list[str]) -> None: ...
    def feed(self, chunk: bytes) -> bool: ...
    def finish(self) -> bool: ...
    @property
    def error(self) -> object: ...
    @property
    def bytes_seen(self) -> int: ...
    def result(self) -> dict: ...

def kineto_invalid_reasons() -> dict[int, str]: ...
