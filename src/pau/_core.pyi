"""Type stub of pau's private native module (see csrc/). Use pau.core instead."""

from typing import Any

from typing_extensions import Buffer

import numpy as np
import numpy.typing as npt

__version__: str

class FeedError(ValueError):
    """The first row a sweep of event batches could not take (pau.engine._native turns it into pau.errors)."""

    code: int  # the core's FeedResult code (csrc/core/sweep_api.hpp)
    row: int  # within its batch
    batch: int

# The histogram of a sweep: rank, window, mask, duration, span_rank, span_start, span_end.
Histogram = dict[str, np.ndarray]

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
        *,
        bucket: int = 0,
        max_buckets: int = 0,  # bucket mode: at most this many windows (0: no bound)
    ) -> None: ...
    def feed(
        self,
        rank: npt.NDArray[np.int32],
        start: npt.NDArray[np.int64],
        end: npt.NDArray[np.int64],
        kind_idx: npt.NDArray[np.integer],
        kind_map: npt.NDArray[np.int8],
        order: npt.NDArray[np.int64] | None = None,
    ) -> tuple[int, int]: ...  # (code, row): code 0 when every row was taken
    def finish(self) -> Histogram: ...
    @property
    def rank_count(self) -> int: ...

class ExclusiveSweep:
    """The exclusive-time sweep (csrc/core/exclusive.hpp) fed batch by batch, no windows."""

    def __init__(
        self,
        span_rank: npt.NDArray[np.int32],
        span_start: npt.NDArray[np.int64],
        span_end: npt.NDArray[np.int64],
        levels: npt.NDArray[np.int8],  # levels[c]: the priority level of kind code c (0 highest)
        kernel: int = 0,  # 0 the best this CPU runs, 1 scalar, 2 AVX-512, 3 AVX2
    ) -> None: ...
    def feed(
        self,
        rank: npt.NDArray[np.int32],
        start: npt.NDArray[np.int64],
        end: npt.NDArray[np.int64],
        kind_idx: npt.NDArray[np.integer],
        kind_map: npt.NDArray[np.int8],
        order: npt.NDArray[np.int64] | None = None,
    ) -> tuple[int, int]: ...  # (code, row): code 0 when every row was taken
    def finish(self) -> Histogram: ...  # masks: the winning kind's bit (0: idle)
    @property
    def simd(self) -> bool: ...

class Cells:
    """The ledger's non-zero cells in (rank, state, activity) order."""

    @property
    def rank(self) -> npt.NDArray[np.int32]: ...
    @property
    def state(self) -> npt.NDArray[np.int8]: ...  # state code
    @property
    def activity(self) -> npt.NDArray[np.int8]: ...  # activity code
    @property
    def duration(self) -> npt.NDArray[np.int64]: ...  # ns

class StateRuns:
    """Runs of state intervals (state_runs)."""

    @property
    def rank(self) -> npt.NDArray[np.int32]: ...
    @property
    def start(self) -> npt.NDArray[np.int64]: ...
    @property
    def end(self) -> npt.NDArray[np.int64]: ...
    @property
    def state(self) -> npt.NDArray[np.int8]: ...

class CrossingSweep:
    """The full ledger's sweep over the cuts of a lifecycle (pau.engine._crossing)."""

    def __init__(
        self,
        events: list[tuple[object, object]],  # __arrow_c_array__() of each batch
        kinds: list[str],
        lifecycle: list[tuple[object, object]],
        *,
        as_of: int,  # -2**63: none
        parts: int,
        chunk_rows: int,  # at most, per chunk of one rank's events
        min_chunk_rows: int,  # at least (the last chunks: see crossing.hpp, chunked)
        threads: int,
        head_rows: int,
        max_crossings_per_event: float,
        levels: npt.NDArray[np.int8] | None = None,  # the exclusive-time sweep: each kind's level; None: the full sweep
        kernel: int = 0,  # of the exclusive-time sweep: 0 best, 1 scalar, 2 AVX-512, 3 AVX2
    ) -> None: ...
    def start(self, helpers: int) -> None: ...
    def wait(
        self,
        ranks: npt.NDArray[np.int32],  # the accountable ranks, sorted
        i_rank: npt.NDArray[np.int32],  # the state intervals, sorted by rank and start
        i_start: npt.NDArray[np.int64],
        i_end: npt.NDArray[np.int64],
        i_state: npt.NDArray[np.int8],
        *,
        act_of_mask: npt.NDArray[np.int8],  # 64 entries
        idle: int,
        n_states: int,
        n_act: int,
    ) -> Cells | None: ...
    @property
    def parts(self) -> int: ...

def set_pool_cores(cores: int) -> bool: ...
def crossed_cells(
    h_rank: npt.NDArray[np.int32],
    h_window: npt.NDArray[np.int64],
    h_mask: npt.NDArray[np.uint8],
    h_duration: npt.NDArray[np.int64],
    *,
    w_start: npt.NDArray[np.int64],  # window w is [w_start[w], w_end[w]): the cuts', or the state runs
    w_end: npt.NDArray[np.int64],
    ranks: npt.NDArray[np.int32],
    i_rank: npt.NDArray[np.int32],
    i_start: npt.NDArray[np.int64],
    i_end: npt.NDArray[np.int64],
    i_state: npt.NDArray[np.int8],
    act_of_mask: npt.NDArray[np.int8],
    idle: int,
    n_states: int,
    n_act: int,
) -> tuple[bool, Cells]: ...
def state_runs(
    rank: npt.NDArray[np.int32],
    start: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    state: npt.NDArray[np.int8],
) -> StateRuns: ...

class LifeStepColumns:
    """Lifecycle rows as int64 columns (views of the core's vectors)."""

    @property
    def row(self) -> npt.NDArray[np.int64]: ...  # position in the table
    @property
    def attempt(self) -> npt.NDArray[np.int64]: ...
    @property
    def rank(self) -> npt.NDArray[np.int64]: ...
    @property
    def start(self) -> npt.NDArray[np.int64]: ...
    @property
    def end(self) -> npt.NDArray[np.int64]: ...
    @property
    def step(self) -> npt.NDArray[np.int64]: ...
    @property
    def tokens(self) -> npt.NDArray[np.int64]: ...

class LifeRowColumns(LifeStepColumns):
    """The rows other than steps, with the columns of the other records."""

    @property
    def rec(self) -> npt.NDArray[np.int8]: ...  # index in the record names, -1 unknown or null
    @property
    def block_end(self) -> npt.NDArray[np.int64]: ...
    @property
    def durable(self) -> npt.NDArray[np.int64]: ...
    @property
    def ok(self) -> npt.NDArray[np.bool_]: ...
    @property
    def kinded(self) -> npt.NDArray[np.int64]: ...  # the rows whose kind is read and not null

class LifeRead:
    """lifecycle_rows' result."""

    @property
    def rows(self) -> LifeRowColumns: ...
    @property
    def kinds(self) -> list[str]: ...  # the kinds of the rows `rows.kinded` names
    @property
    def n_step(self) -> int: ...
    @property
    def first(self) -> int: ...  # the first step row (-1: none)
    @property
    def steps(self) -> LifeStepColumns | None: ...  # None: the step rows are one run of rows

def lifecycle_rows(
    lifecycle: list[tuple[object, object]],  # __arrow_c_array__() of each batch
    names: list[str],  # the record names
    step_code: int,
    kinded: list[bool],  # per record name: its kind is read
) -> LifeRead | None: ...
def lifecycle_cuts(lifecycle: list[tuple[object, object]], as_of: int) -> npt.NDArray[np.int64] | None: ...

# lifecycle attribution's native parts (csrc/core/life_checks.hpp, life_setup.hpp, paint.hpp)
class Painted:
    """paint's maximal pieces."""

    @property
    def rank(self) -> npt.NDArray[np.int32]: ...
    @property
    def start(self) -> npt.NDArray[np.int64]: ...
    @property
    def end(self) -> npt.NDArray[np.int64]: ...
    @property
    def row(self) -> npt.NDArray[np.int64]: ...  # the interval each piece is of

def paint(
    rank: npt.NDArray[np.int32],
    start: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    level: npt.NDArray[np.int8],
    order: npt.NDArray[np.int64],
) -> Painted: ...
def by_rank_start(
    rank: npt.NDArray[np.int64], start: npt.NDArray[np.int64], r_lo: int, rank_lut: npt.NDArray[np.int64], n_ranks: int
) -> npt.NDArray[np.int64]: ...
def row_checks(
    rec: npt.NDArray[np.int8],
    start: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    block_end: npt.NDArray[np.int64],
    durable: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
    attempt: npt.NDArray[np.int64],
    step: npt.NDArray[np.int64],
    *,
    acc: int,
    needs_step: npt.NDArray[np.bool_],
) -> npt.NDArray[np.int8]: ...
def step_codes(
    start: np.ndarray, end: np.ndarray, rank: np.ndarray, attempt: np.ndarray, step: np.ndarray, tokens: np.ndarray
) -> npt.NDArray[np.int8]: ...
class StepScan:
    """What scan_steps found (csrc/core/life_checks.hpp, StepScan)."""

    @property
    def bad(self) -> int: ...
    @property
    def after(self) -> int: ...
    @property
    def max_start(self) -> int: ...
    @property
    def max_end(self) -> int: ...
    @property
    def ordered(self) -> bool: ...
    @property
    def neg_rank(self) -> int: ...
    @property
    def step_min(self) -> int: ...
    @property
    def rank_seen(self) -> npt.NDArray[np.bool_]: ...
    @property
    def rank_over(self) -> int: ...
    @property
    def att_count(self) -> npt.NDArray[np.int64]: ...
    @property
    def att_max_step(self) -> npt.NDArray[np.int64]: ...
    @property
    def att_max_end(self) -> npt.NDArray[np.int64]: ...
    @property
    def att_out(self) -> int: ...

def scan_steps(
    start: np.ndarray,
    end: np.ndarray,
    rank: np.ndarray,  # int32 or int64
    attempt: np.ndarray,  # int32 or int64
    step: np.ndarray,
    tokens: np.ndarray,
    *,
    cut: int,
    att_lo: int,
    att_n: int,
    end_bits: npt.NDArray[np.uint8],
    end_off: int,
    end_out: npt.NDArray[np.int64],
) -> StepScan: ...
def fill_nulls(
    values: np.ndarray, bits: npt.NDArray[np.uint8], offset: int, fill: int, out: npt.NDArray[np.int64]
) -> None: ...
def lut_map(values: np.ndarray, lo: int, lut: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...
class Lineage:
    """The lineage rule's result."""

    @property
    def base(self) -> npt.NDArray[np.int64]: ...
    @property
    def head(self) -> npt.NDArray[np.int64]: ...
    @property
    def on(self) -> npt.NDArray[np.bool_]: ...
    @property
    def on_lineage(self) -> npt.NDArray[np.bool_]: ...
    @property
    def bad(self) -> npt.NDArray[np.int64]: ...

def lineage(
    r_row: npt.NDArray[np.int64],
    r_att: npt.NDArray[np.int64],
    r_step: npt.NDArray[np.int64],
    r_start: npt.NDArray[np.int64],
    *,
    c_att: npt.NDArray[np.int64],
    c_step: npt.NDArray[np.int64],
    c_dur: npt.NDArray[np.int64],
    has_durable: npt.NDArray[np.bool_],
    has_steps: npt.NDArray[np.bool_],
    done_step: npt.NDArray[np.int64],
    completed: npt.NDArray[np.bool_],
    null: int,
    job_att: npt.NDArray[np.int64],  # empty: one job; many: each job's dense attempts (Setup.job_att)
) -> Lineage: ...

class Layer:
    """A painted layer of the set-up."""

    @property
    def rank(self) -> npt.NDArray[np.int32]: ...
    @property
    def start(self) -> npt.NDArray[np.int64]: ...
    @property
    def end(self) -> npt.NDArray[np.int64]: ...
    @property
    def state(self) -> npt.NDArray[np.int8]: ...
    @property
    def att(self) -> npt.NDArray[np.int32]: ...
    @property
    def step(self) -> npt.NDArray[np.int64]: ...

class Setup:
    """lifecycle_setup's result (csrc/core/life_setup.hpp, Setup): arrays are views of its vectors."""

    @property
    def status(self) -> int: ...  # 0, or a relational error code
    # the error rows: row, rank, member start, member end
    @property
    def e_row(self) -> npt.NDArray[np.int64]: ...
    @property
    def e_rank(self) -> npt.NDArray[np.int64]: ...
    @property
    def e_ms(self) -> npt.NDArray[np.int64]: ...
    @property
    def e_me(self) -> npt.NDArray[np.int64]: ...
    @property
    def error_codes(self) -> npt.NDArray[np.int64]: ...  # many jobs: the code of each error row
    # attempts by dense index
    @property
    def a_ids(self) -> npt.NDArray[np.int64]: ...
    @property
    def a_start(self) -> npt.NDArray[np.int64]: ...
    @property
    def a_end(self) -> npt.NDArray[np.int64]: ...
    @property
    def a_running(self) -> npt.NDArray[np.bool_]: ...
    @property
    def a_cause(self) -> npt.NDArray[np.int64]: ...  # -1: none
    @property
    def a_completed(self) -> npt.NDArray[np.bool_]: ...
    @property
    def f_att(self) -> npt.NDArray[np.int64]: ...
    @property
    def f_time(self) -> npt.NDArray[np.int64]: ...
    @property
    def f_kind(self) -> npt.NDArray[np.int64]: ...
    @property
    def c_att(self) -> npt.NDArray[np.int64]: ...
    @property
    def c_step(self) -> npt.NDArray[np.int64]: ...
    @property
    def c_dur(self) -> npt.NDArray[np.int64]: ...
    @property
    def c_ok(self) -> npt.NDArray[np.bool_]: ...
    @property
    def has_durable(self) -> npt.NDArray[np.bool_]: ...
    @property
    def m_ids(self) -> npt.NDArray[np.int64]: ...
    @property
    def m_off(self) -> npt.NDArray[np.int64]: ...
    @property
    def m_ranks(self) -> npt.NDArray[np.int64]: ...
    @property
    def rank_values(self) -> npt.NDArray[np.int64]: ...
    @property
    def r_lo(self) -> int: ...
    @property
    def rank_lut(self) -> npt.NDArray[np.int64]: ...
    @property
    def m_start(self) -> npt.NDArray[np.int64]: ...
    @property
    def m_end(self) -> npt.NDArray[np.int64]: ...
    @property
    def dense(self) -> bool: ...
    @property
    def acc_min(self) -> int: ...
    @property
    def background(self) -> Layer: ...
    @property
    def overlay(self) -> Layer: ...
    @property
    def o_ckpt(self) -> npt.NDArray[np.int64]: ...
    @property
    def r_row(self) -> npt.NDArray[np.int64]: ...
    @property
    def r_att(self) -> npt.NDArray[np.int64]: ...
    @property
    def r_step(self) -> npt.NDArray[np.int64]: ...
    @property
    def r_start(self) -> npt.NDArray[np.int64]: ...
    @property
    def has_steps(self) -> npt.NDArray[np.bool_]: ...
    @property
    def done_step(self) -> npt.NDArray[np.int64]: ...
    @property
    def m_row(self) -> npt.NDArray[np.int64]: ...
    @property
    def job_att(self) -> npt.NDArray[np.int64]: ...
    @property
    def job_acc_min(self) -> npt.NDArray[np.int64]: ...

def lifecycle_setup(
    rec: npt.NDArray[np.int8],
    attempt: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
    start: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    step: npt.NDArray[np.int64],
    block_end: npt.NDArray[np.int64],
    durable: npt.NDArray[np.int64],
    *,
    ok: npt.NDArray[np.bool_],
    kcode: npt.NDArray[np.int64],
    n_fail_kinds: int,
    as_of: int,
    known_ranks: list[int],
    step_ids: list[int],
    sa_count: npt.NDArray[np.int64],
    sa_max_step: npt.NDArray[np.int64],
    sa_max_end: npt.NDArray[np.int64],
    s_att: np.ndarray,  # int32 or int64
    s_end: npt.NDArray[np.int64],
    s_step: npt.NDArray[np.int64],
    phase_state: npt.NDArray[np.int8],
    st_codes: npt.NDArray[np.int8],
    # many jobs (empty: one): the job of each row, and of each internal rank and attempt id
    row_job: npt.NDArray[np.int64],
    rank_job: npt.NDArray[np.int64],
    att_job: npt.NDArray[np.int64],
) -> Setup: ...

# per batch: rank, start, end, kind indices, kind map (dictionary position -> kind code)
_Batch = tuple[npt.NDArray[np.int32], npt.NDArray[np.int64], npt.NDArray[np.int64], np.ndarray, npt.NDArray[np.int8]]

def sweep_batches(
    win_rank: npt.NDArray[np.int32],
    win_start: npt.NDArray[np.int64],
    win_end: npt.NDArray[np.int64],
    win_row: npt.NDArray[np.int64],
    span_rank: npt.NDArray[np.int32],
    span_start: npt.NDArray[np.int64],
    span_end: npt.NDArray[np.int64],
    *,
    bucket: int,
    batches: list[_Batch],
    parts: int,
    order: npt.NDArray[np.int64] | None = None,
    max_buckets: int = 0,
) -> Histogram: ...  # raises FeedError
def exclusive_batches(
    span_rank: npt.NDArray[np.int32],
    span_start: npt.NDArray[np.int64],
    span_end: npt.NDArray[np.int64],
    levels: npt.NDArray[np.int8],  # levels[c]: the priority level of kind code c (0 highest)
    *,
    batches: list[_Batch],
    parts: int,
    order: npt.NDArray[np.int64] | None = None,
    kernel: int = 0,  # 0 the best this CPU runs, 1 scalar, 2 AVX-512, 3 AVX2
) -> Histogram: ...  # masks: the winning kind's bit; raises FeedError
def avx512_available() -> bool: ...
def avx2_available() -> bool: ...
def rank_parts(batches: list[_Batch], parts: int) -> list[tuple[int, int]]: ...
def order_by_rank_start(
    rank: npt.NDArray[np.int32], start: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]: ...

ATTRIB_MAX_WEIGHT: int  # total weight in flight on a busy piece (2**63 - 1)
ATTRIB_MAX_ROWS: int
ATTRIB_KEY_BITS: int  # fractional parts of shares are ranked at 2**-ATTRIB_KEY_BITS ns

def kept_memory_bytes() -> int: ...  # freed large outputs kept mapped for the next ones
def release_kept_memory() -> None: ...
class Attribution:
    """attribute_busy's result (csrc/core/attrib.hpp)."""

    @property
    def prefill_ns(self) -> npt.NDArray[np.int64]: ...  # per request
    @property
    def decode_ns(self) -> npt.NDArray[np.int64]: ...
    @property
    def attributed_ns(self) -> npt.NDArray[np.int64]: ...
    @property
    def idle_ns(self) -> npt.NDArray[np.int64]: ...  # per busy row
    @property
    def replica_busy_ns(self) -> npt.NDArray[np.int64]: ...
    @property
    def replica_idle_ns(self) -> npt.NDArray[np.int64]: ...
    @property
    def by_outcome(self) -> npt.NDArray[np.int64] | None: ...  # (replica, outcome); None without outcome
    @property
    def overflow(self) -> tuple[int, int, str] | None: ...  # (replica, time_ns, "weight" | "precision")

def attribute_busy(
    replica: npt.NDArray[np.int32],
    arrival: npt.NDArray[np.int64],
    first_token: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    input_tokens: npt.NDArray[np.int64],
    output_tokens: npt.NDArray[np.int64],
    *,
    prefill_weight: int,
    decode_weight: int,
    busy_replica: npt.NDArray[np.int32],
    busy_start: npt.NDArray[np.int64],
    busy_end: npt.NDArray[np.int64],
    n_replicas: int,
    outcome: npt.NDArray[np.int8] | None = None,
    n_outcomes: int = 1,
    skip_outcome: int = -1,
    first_token_null: npt.NDArray[np.bool_] | None = None,
    rows_checked: bool = False,
) -> Attribution:
    """Busy time attributed to the request phases in flight; see csrc/core/attrib.hpp."""

class RequestRows:
    """request_rows' result (csrc/core/requests.hpp)."""

    @property
    def reason(self) -> npt.NDArray[np.int8]: ...  # per row: 0 valid, else the invalid reason
    @property
    def outcome(self) -> npt.NDArray[np.int8]: ...
    @property
    def ttft(self) -> npt.NDArray[np.int64]: ...
    @property
    def e2e(self) -> npt.NDArray[np.int64]: ...
    @property
    def tpot(self) -> npt.NDArray[np.float64]: ...
    @property
    def bad(self) -> int: ...
    @property
    def counts(self) -> list[int]: ...  # per outcome
    @property
    def accepted_input_tokens(self) -> int: ...
    @property
    def accepted_output_tokens(self) -> int: ...
    @property
    def arrival_min(self) -> int: ...
    @property
    def arrival_max(self) -> int: ...
    @property
    def end_max(self) -> int | None: ...

def request_rows(
    arrival: npt.NDArray[np.int64],
    *,
    arrival_null: npt.NDArray[np.bool_] | None,
    end: npt.NDArray[np.int64],
    end_null: npt.NDArray[np.bool_] | None,
    first_token: npt.NDArray[np.int64],
    first_token_null: npt.NDArray[np.bool_] | None,
    input_tokens: npt.NDArray[np.int64],
    input_tokens_null: npt.NDArray[np.bool_] | None,
    output_tokens: npt.NDArray[np.int64],
    output_tokens_null: npt.NDArray[np.bool_] | None,
    status: npt.NDArray[np.int8],
    status_null: npt.NDArray[np.bool_] | None,
    replica_null: npt.NDArray[np.bool_] | None,
    need_replica: bool,
    slo_ttft: int | None,
    slo_tpot: float | None,
    slo_e2e: int | None,
) -> RequestRows:
    """Invalid reason per row, TTFT/E2E/TPOT, outcome, counts and window bounds in one pass."""

def first_seen_codes(
    a: npt.NDArray[np.integer],
    a_null: npt.NDArray[np.bool_] | None,
    b: npt.NDArray[np.integer],
    b_null: npt.NDArray[np.bool_] | None,
    max_range: int,
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int64]] | None:
    """Codes of int32/int64 values in order of first appearance (a, then b); None when
    max - min > max_range."""

class KinetoResult:
    """KinetoParser.result's columns (numpy arrays by name), metadata and strings."""

    @property
    def rows(self) -> dict[str, np.ndarray]: ...  # the kept events: ts_ns, dur_ns, cat, name, device, ...
    @property
    def device_order(self) -> npt.NDArray[np.int64]: ...  # device rows sorted by (device, ts)
    @property
    def set_aside(self) -> dict[str, np.ndarray]: ...  # offset, line, reason, cat, name
    @property
    def meta(self) -> dict[str, Any]: ...  # the trace's metadata (ints, strings, lists, None where absent)
    @property
    def strings(self) -> list[str]: ...

class KinetoParser:
    """Streaming Chrome-trace (Kineto) tokenizer; see pau.readers.kineto."""

    def __init__(self, device_categories: list[str]) -> None: ...
    def feed(self, chunk: bytes) -> bool: ...
    def finish(self) -> bool: ...
    @property
    def error(self) -> tuple[str, int, int] | None: ...  # (message, byte offset, line) once failed
    @property
    def bytes_seen(self) -> int: ...
    def result(self) -> KinetoResult: ...

def kineto_invalid_reasons() -> dict[int, str]: ...

# the Parquet page decoder of pau's archive layout (csrc/core/parquet.hpp, pau.engine._parquet)
def parquet_ints(
    chunk: Buffer, bits: int, n: int, verify: bool, out: Buffer, codec: int = 0, optional: bool = False
) -> bool: ...
def parquet_dictionary(
    chunk: Buffer, index_bits: int, n: int, verify: bool, out: Buffer, codec: int = 0, optional: bool = False
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8]] | None: ...
def snappy_decompress(data: Buffer, n: int) -> bytes | None: ...
def crc32(data: Buffer) -> int: ...
