"""MLPerf ``:::MLLOG`` result logs -> pau's lifecycle table.

An MLPerf training result (``results/<system>/<benchmark>/result_N.txt``) is a text log
in which the ``mlperf_logging`` lines are ``:::MLLOG {json}``, possibly after a prefix
(``0: ``, ``[1,0]<stdout>:``, a host name...). :func:`read_mllog` keeps those lines and
ignores every other line. Logs written by every rank repeat each line: identical lines
(same key, time, value and metadata) are counted once.

What becomes what (DESIGN §2.2, all records attempt 0)
------------------------------------------------------
* ``init_start``/``init_stop`` -> ``phase`` ``init`` (first start to last stop).
* ``run_start``/``run_stop`` -> the run. ``time_to_train_ns = run_stop - run_start``
  (the MLPerf score). The ``attempt`` record spans the first ``init_start`` (or
  ``run_start``) to ``run_stop`` or the last line timed after it (an offline
  evaluation after ``run_stop``, with a warning), so that initialization lies inside the attempt as
  DESIGN §2.2 requires (outside any attempt it would be counted as outage). Its kind
  is ``completed`` when ``run_stop``'s ``metadata.status`` is ``success``, else
  ``failed`` with a ``failure`` record at ``run_stop`` (kind ``aborted``, or the status
  written). A log without ``run_stop`` is a ``failed`` attempt ending at the last
  MLLOG time in the file, with a ``failure`` of kind ``no_run_stop`` and a warning.
* ``block_start``/``block_stop`` -> ``step`` records; when a log has no blocks,
  ``epoch_start``/``epoch_stop`` are used instead. Starts and stops are paired in
  order (first open, first closed). ``step`` is the ordinal of the block (epoch) in the
  run, 1, 2, ... (MLPerf blocks are the unit of progress MLPerf logs; a true optimizer
  step count is not in the log). A block still open at the end of the run ends there.
  ``tokens`` is null.
* ``eval_start``/``eval_stop`` -> ``phase`` ``eval``.
* ``epoch_start``/``epoch_stop`` and ``block_start``/``block_stop`` are also kept as
  spans (``epoch_spans``, ``block_spans``: start, end and the start line's
  ``epoch_num``, ``first_epoch_num``, ``epoch_count``, ``samples_count``, ``step_num``),
  counted as ``epochs`` and ``blocks``; the ``epoch_count``/``first_epoch_num`` keys
  (the planned epochs, as SSD writes them) as ``epoch_count``/``first_epoch_num``.
* ``eval_accuracy`` -> ``eval``: every value in time order with its time
  (``time_ns``, ``run_time_ns`` since ``run_start``) and metadata (``epoch_num``,
  ``samples_count``, ``step_num``, ``metric``), judged against the benchmark's quality
  target by :func:`pau.readers.mlperf_rules.judge` (MLCommons' compliance checker's targets; the
  round from the path, ``training_v4.0``, or ``mlperf_round=``). A run whose last
  eval misses its target although ``run_stop`` says ``success`` (or reaches it although
  it does not) gets the warning ``mllog.target_mismatch``; an eval value that is not a
  number is kept, not judged, and warned (``mllog.eval_not_numeric``).
* ``accountable``: one record per accelerator, over the attempt. The accelerator count
  is ``number_of_nodes * accelerators_per_node`` from the system description JSON:
  ``<submitter>/systems/<system>.json`` beside ``<submitter>/results/<system>/...``
  (the MLPerf layout), else a ``:::SYSJSON {json}`` line in the log, else ``system=``.
  Without one, a single accelerator is assumed, with a warning. All other records use
  ``rank = -1`` (every accelerator of the attempt).

Time is ``time_ms`` (epoch milliseconds) times 10**6, exact (integers; a fractional
``time_ms`` is converted from its decimal text, not a float).

A malformed ``:::MLLOG`` line (JSON that does not parse, not an object, no ``key`` or
``time_ms``, a ``time_ms`` that is not a finite number whose ns fit int64) raises
:class:`pau.errors.MLLogError` naming the file and the line, or with
``on_invalid="quarantine"`` is set aside in ``MLLogRun.quarantine`` with its reason.

:func:`read_mllog` reads one log; :func:`read_mllog_runs` a log or a directory, one run
per result file: every ``result_*.txt`` below it (recursively), else every
``*.txt``/``*.log`` with an MLLOG line, in path order.
"""

from __future__ import annotations

import decimal
import json
import os
import pathlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, cast

import pyarrow as pa

import pau.readers.mlperf_rules as _mlperf
from pau.engine.vocab import LIFECYCLE_SCHEMA as _LIFECYCLE_SCHEMA
from pau.engine.types import MLPerfEval, RunWarning, check_on_invalid, quarantine_schema, quarantine_table
from pau.errors import MLLogError, MultipleRunsError, NoInputError, PauError

__all__ = ["MLLogError", "MLLogRun", "QUARANTINE_SCHEMA", "read_mllog", "read_mllog_runs", "mllog_summary"]


_MARK = ":::MLLOG"
_SYSMARK = ":::SYSJSON"

#: The lines :func:`read_mllog` sets aside with ``on_invalid="quarantine"``
#: (docs/bad-input.md): ``source_file, location`` (``line N``), ``reason``, then the
#: line number and the line's ``key`` (null when the line has none).
QUARANTINE_SCHEMA = quarantine_schema(pa.field("line", pa.int64()), pa.field("key", pa.string()))


def _no_quarantine() -> pa.Table:
    return QUARANTINE_SCHEMA.empty_table()


@dataclass
class MLLogRun:
    """One MLPerf result log, as :func:`read_mllog` returns it.

    Attributes
    ----------
    lifecycle : pyarrow.Table
        DESIGN §2.2 records (see the module docstring).
    path : str
    benchmark, submitter, system : str or None
        From ``submission_benchmark``, ``submission_org``, ``submission_platform`` (or the
        system JSON's ``system_name``).
    status : str
        ``success``, ``aborted`` (or another status written), or ``no_run_stop``.
    accelerators : int
        Ranks in ``lifecycle`` (1 when unknown, see ``accelerators_source``).
    accelerators_source : str
        ``system json <path>``, ``SYSJSON line``, ``argument`` or ``assumed``.
    accelerator_model : str or None
    init_ns, time_to_train_ns : int or None
        ``init_stop - init_start``; ``run_stop - run_start`` (None without ``run_stop``).
    start_ns, end_ns : int
        The attempt (first ``init_start`` or ``run_start`` to ``run_stop`` or last line).
    blocks : int
        ``block_start`` lines (0 when the log has no blocks).
    evals : int
        ``eval_start`` lines (eval phases).
    eval : MLPerfEval
        :func:`pau.readers.mlperf_rules.judge` of the ``eval_accuracy`` values: ``metric, values, last,
        best, target, direction, reached, target_source, round, division, parts, assumed,
        note``.
    warnings : list of RunWarning
    division : str or None
        ``submission_division`` (``closed``, ``open``).
    epochs : int
        ``epoch_start`` lines.
    step_unit : str
        What the lifecycle's ``step`` records are: ``block``, else ``epoch``.
    epoch_count, first_epoch_num : number or None
        The values of the ``epoch_count`` and ``first_epoch_num`` keys, when written.
    epoch_spans, block_spans : list of dict
        Each epoch (block): ``start_ns``, ``end_ns`` (paired in order; one left open ends
        at the attempt's end) and its start line's ``epoch_num``, ``first_epoch_num``,
        ``epoch_count``, ``samples_count``, ``step_num`` where written.
    quarantine : pyarrow.Table
        The malformed ``:::MLLOG`` lines set aside with ``on_invalid="quarantine"``, one row
        each with its reason (:data:`QUARANTINE_SCHEMA`); empty when none was (always with
        ``on_invalid="raise"``, which raises at the first).
    """

    lifecycle: pa.Table
    path: str
    benchmark: str | None
    submitter: str | None
    system: str | None
    status: str
    accelerators: int
    accelerators_source: str
    accelerator_model: str | None
    init_ns: int | None
    time_to_train_ns: int | None
    start_ns: int
    end_ns: int
    blocks: int
    evals: int
    eval: MLPerfEval
    warnings: list[RunWarning] = field(default_factory=list)
    division: str | None = None
    epochs: int = 0
    step_unit: str = "epoch"
    epoch_count: Any = None
    first_epoch_num: Any = None
    epoch_spans: list[dict[str, Any]] = field(default_factory=list)
    block_spans: list[dict[str, Any]] = field(default_factory=list)
    quarantine: pa.Table = field(default_factory=_no_quarantine)

    @property
    def accelerator_hours(self) -> float:
        """Accountable accelerator-hours: accelerators x attempt length."""
        return self.accelerators * (self.end_ns - self.start_ns) / 3.6e12

    def __repr__(self) -> str:
        return (f"MLLogRun({os.path.basename(self.path)!r}, benchmark={self.benchmark!r}, "
                f"status={self.status!r}, accelerators={self.accelerators}, "
                f"time_to_train_ns={self.time_to_train_ns}, warnings={len(self.warnings)})")


_INT64 = (-(1 << 63), (1 << 63) - 1)


def _time_ns(v: Any) -> int | None:
    """``time_ms`` in ns, or None when it is not a number whose ns fit int64 (the line is
    then malformed, as a line of bad JSON is: refused, or set aside with its reason)."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        ns = v * 1_000_000
    elif isinstance(v, decimal.Decimal):
        # beyond 10**25 ms no ns fits int64: checked before multiplying, so that an
        # exponent of a million digits costs nothing
        if not v.is_finite() or v.adjusted() > 25:
            return None
        ns = int((v * 1_000_000).to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
    else:
        return None
    return ns if _INT64[0] <= ns <= _INT64[1] else None


def _text(v: Any) -> str | None:
    """A name from the log (benchmark, submitter...) as text."""
    return None if v is None else v if isinstance(v, str) else json.dumps(v, default=str)


def _kept_ns(rec: dict[str, Any]) -> int:
    """The time of a record :func:`_parse` kept (it has one), in ns."""
    return cast(int, _time_ns(rec["time_ms"]))


def _as_int(v: Any) -> int | None:
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


#: The most accelerators a system description may count (one accountable record each).
MAX_ACCELERATORS = 1_000_000


def _system_arg(system: Any) -> dict[str, Any]:
    """``system=`` of :func:`read_mllog`: a path to a system description JSON, or a mapping."""
    if not isinstance(system, (str, os.PathLike)):
        try:
            return dict(system)
        except (TypeError, ValueError):
            raise PauError(f"system: expected a path or a mapping, got {type(system).__name__}") from None
    p = os.fspath(system)
    try:
        info = json.loads(pathlib.Path(p).read_text())
    except OSError as exc:
        raise MLLogError(p, f"the system description cannot be read ({exc.strerror or exc})",
                         "give the path of the system description JSON") from None
    except (ValueError, RecursionError):
        raise MLLogError(p, "the system description is not valid JSON",
                         "give an MLPerf system description (systems/<system>.json)") from None
    if not isinstance(info, dict):
        raise MLLogError(p, "the system description is not a JSON object",
                         "give an MLPerf system description (systems/<system>.json)")
    return info


def _system_json(path: pathlib.Path) -> pathlib.Path | None:
    # <submitter>/results/<system>/<benchmark>/result_N.txt -> <submitter>/systems/<system>.json
    p = path.resolve()
    if len(p.parents) >= 4 and p.parents[2].name == "results":
        cand = p.parents[3] / "systems" / f"{p.parents[1].name}.json"
        if cand.is_file():
            return cand
    return None


def _shown(v: Any) -> str:
    """A value of a malformed line as a reason shows it (at most 40 characters)."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 128:
        return f"an integer of {v.bit_length()} bits"
    t = str(v) if isinstance(v, (decimal.Decimal, int)) else repr(v) if isinstance(v, str) else type(v).__name__
    return t if len(t) <= 40 else t[:37] + "..."


def _record(dec: json.JSONDecoder, text: str) -> tuple[dict[str, Any] | None, str | None, str]:
    """The record of an ``:::MLLOG`` line's text, or None, the line's key (None when it
    has none) and why it cannot be used."""
    try:
        obj, _ = dec.raw_decode(text)
    except RecursionError:
        return None, None, "the JSON after :::MLLOG is nested deeper than Python's stack"
    except json.JSONDecodeError as exc:
        return None, None, f"the JSON after :::MLLOG does not parse ({exc.msg}, column {exc.colno})"
    except ValueError as exc:   # an integer past Python's digit limit
        return None, None, f"the JSON after :::MLLOG does not parse ({exc})"
    if not isinstance(obj, dict):
        return None, None, f"the JSON after :::MLLOG is not an object (a {type(obj).__name__})"
    key = obj.get("key")
    if not isinstance(key, str):
        return None, None, "no key (a string)" if key is None else f"key is not a string ({_shown(key)})"
    if "time_ms" not in obj:
        return None, key, "no time_ms"
    if _time_ns(obj["time_ms"]) is None:
        return None, key, (f"time_ms is not a finite number of ms whose ns fit int64 "
                           f"({_shown(obj['time_ms'])})")
    return obj, key, ""


#: A malformed line: its number, its key (or None) and why.
_Bad = Tuple[int, Optional[str], str]


def _sysjson(dec: json.JSONDecoder, line: str, j: int) -> dict[str, Any] | None:
    """The system description of a ``:::SYSJSON`` line (None: not a JSON object)."""
    try:
        obj, _ = dec.raw_decode(line[j + len(_SYSMARK):].lstrip())
    except (ValueError, RecursionError):   # nested past Python's stack: not a system
        return None
    return obj if isinstance(obj, dict) else None


def _parse(path: str, on_invalid: str = "raise") -> tuple[list[tuple[int, dict[str, Any]]], dict[str, Any] | None,
                                                          dict[str, Any], list[_Bad]]:
    """(line number, record) of the distinct MLLOG lines, the SYSJSON object, counts, and
    the malformed lines (``on_invalid="raise"``: :class:`MLLogError` at the first)."""
    dec = json.JSONDecoder(parse_float=decimal.Decimal)
    seen: set[str] = set()
    out: list[tuple[int, dict[str, Any]]] = []
    bad: list[_Bad] = []
    sysjson = None
    counts: dict[str, Any] = {"lines": 0, "mllog": 0, "duplicate": 0}
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, 1):
            counts["lines"] += 1
            i = line.find(_MARK)
            if i < 0:
                j = line.find(_SYSMARK)
                if j >= 0 and sysjson is None:
                    sysjson = _sysjson(dec, line, j)
                continue
            counts["mllog"] += 1
            text = line[i + len(_MARK):].strip()
            obj, key, why = _record(dec, text)
            if obj is None:
                if on_invalid == "raise":
                    raise MLLogError(path, f"malformed :::MLLOG line: {why}", "correct or delete the line (an "
                                     "intact MLPerf log has none), or read with on_invalid='quarantine' to set "
                                     "such lines aside", line=no)
                bad.append((no, key, why))
            elif text in seen:
                counts["duplicate"] += 1
            else:
                seen.add(text)
                out.append((no, obj))
    return out, sysjson, counts, bad


def _plain(v: Any) -> Any:
    """A value from the log, JSON-able: a decimal fraction as a float (the float the
    checker's own JSON parser gives), containers converted item by item."""
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


#: Metadata of epoch, block and eval lines that say where in training they are.
_PROGRESS = ("epoch_num", "first_epoch_num", "epoch_count", "samples_count", "step_num")


def _where(rec: dict[str, Any], keys: tuple[str, ...] = _PROGRESS) -> dict[str, Any]:
    md = rec.get("metadata")
    return {k: _plain(md[k]) for k in keys if k in md} if isinstance(md, dict) else {}


def _spans(by_key: dict[str, Any], unit: str, end: int) -> list[dict[str, Any]]:
    """The epochs (``unit="epoch"``) or blocks of a log: start/stop paired in order, with
    the start line's progress metadata."""
    starts = sorted(by_key.get(f"{unit}_start", []), key=lambda x: x[0])
    pairs = _pairs([t for t, _ in starts], [t for t, _ in by_key.get(f"{unit}_stop", [])], end)
    return [{"start_ns": s, "end_ns": e, **_where(rec)} for (_, rec), (s, e) in zip(starts, pairs)]


def _pairs(starts: list[int], stops: list[int], end: int) -> list[tuple[int, int]]:
    """Pair starts and stops in order; a start with no stop ends at ``end``."""
    out, si = [], 0
    stops = sorted(stops)
    for s in sorted(starts):
        while si < len(stops) and stops[si] < s:
            si += 1
        if si < len(stops):
            out.append((s, stops[si]))
            si += 1
        else:
            out.append((s, max(s, end)))
    return out


_Recs = List[Tuple[int, Dict[str, Any]]]


class _Keys:
    """The log's records by key, each with its kept time (ns)."""

    def __init__(self, recs: _Recs):
        self.by_key: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for _, r in recs:
            self.by_key.setdefault(r["key"], []).append((_kept_ns(r), r))

    def times(self, key: str) -> list[int]:
        return sorted(t for t, _ in self.by_key.get(key, []))

    def value(self, key: str) -> Any:
        return self.by_key[key][0][1].get("value") if key in self.by_key else None


def _check_lines(path: str, recs: _Recs, counts: dict[str, Any], bad: list[_Bad],
                 warnings: list[RunWarning]) -> None:
    """Raise when no line is usable; warn of the malformed lines set aside and of
    repeated lines."""
    if not recs:
        if bad:
            raise MLLogError(path, f"all {len(bad)} :::MLLOG lines are malformed (first: {bad[0][2]})",
                             "give an intact MLPerf log; a truncated copy loses its lines", line=bad[0][0])
        raise MLLogError(path, f"no :::MLLOG lines in {counts['lines']} lines: not an MLPerf result log",
                         "give an MLPerf training result log (result_N.txt)")
    if bad:
        warnings.append(RunWarning("mllog.malformed_lines", f"{path}: {len(bad)} malformed :::MLLOG lines set aside "
                                   f"in the quarantine (first at line {bad[0][0]}: {bad[0][2]})"))
    if counts["duplicate"]:
        warnings.append(RunWarning("mllog.repeated_lines", f"{path}: {counts['duplicate']} repeated :::MLLOG lines (one per rank) counted once"))


def _quarantine(path: str, bad: list[_Bad]) -> pa.Table:
    """The malformed lines as :data:`QUARANTINE_SCHEMA` rows."""
    return quarantine_table(QUARANTINE_SCHEMA, path, [f"line {no}" for no, _, _ in bad], [why for _, _, why in bad],
                            line=[no for no, _, _ in bad], key=[k for _, k, _ in bad])


def _attempt(path: str, recs: _Recs, keys: _Keys, warnings: list[RunWarning]) -> tuple[int, int, str]:
    """The attempt's start, end and status (``no_run_stop`` without a run_stop line)."""
    run_start, run_stop, init_start = keys.times("run_start"), keys.times("run_stop"), keys.times("init_start")
    last = max(_kept_ns(r) for _, r in recs)
    if not run_start:
        raise MLLogError(path, "no run_start line: the run never started training",
                         "give a complete MLPerf result log; a log cut before run_start has no run to account")
    start = init_start[0] if init_start else run_start[0]
    if not run_stop:
        warnings.append(RunWarning("mllog.no_run_stop", f"{path}: no run_stop line: a failed attempt ending at the last MLLOG line"))
        return start, last, "no_run_stop"
    stop = run_stop[-1]
    # Lines timed after run_stop (an offline evaluation of the checkpoints, as
    # stable_diffusion logs it) still occupy the accelerators: the attempt runs to
    # the last line.
    end = max(stop, last)
    if end > stop:
        after = sum(1 for _, r in recs if _kept_ns(r) > stop)
        warnings.append(RunWarning("mllog.lines_after_run_stop", f"{path}: {after} :::MLLOG lines are timed after run_stop (by up to "
                        f"{(end - stop) / 1e9:,.3f} s): the attempt runs to the last of them"))
    stop_rec = [r for t, r in keys.by_key["run_stop"] if t == stop][0]
    md = stop_rec["metadata"] if isinstance(stop_rec.get("metadata"), dict) else {}
    status = str(md.get("status", "unknown"))
    if status != "success":
        warnings.append(RunWarning("mllog.run_failed", f"{path}: run_stop status is {status!r}: a failed attempt"))
    return start, end, status


def _eval(path: str, recs: _Recs, keys: _Keys, status: str, mlperf_round: str | None,
          warnings: list[RunWarning]) -> MLPerfEval:
    """The eval metric's values judged against the quality target (:func:`mlperf_rules.judge`)."""
    division, benchmark = _text(keys.value("submission_division")), _text(keys.value("submission_benchmark"))
    run_start = keys.times("run_start")[0]
    values, not_numeric, first_bad = [], 0, None
    for no, rec in sorted(((no, r) for no, r in recs if r["key"] == _mlperf.EVAL_KEY), key=lambda x: _kept_ns(x[1])):
        t, v = _kept_ns(rec), _plain(rec.get("value"))
        item = {"value": v, "time_ns": t, "run_time_ns": t - run_start, **_where(rec, _PROGRESS + ("metric",))}
        if "metric" in item:
            item["metric"] = _text(item["metric"])
        if not (_mlperf.is_number(v) or (isinstance(v, dict) and v and all(_mlperf.is_number(x) for x in v.values()))):
            not_numeric += 1
            first_bad = first_bad or no
        values.append(item)
    if not_numeric:
        warnings.append(RunWarning("mllog.eval_not_numeric", f"{path}: {not_numeric} {_mlperf.EVAL_KEY} lines have a value "
                                   f"that is not a finite number (first at line {first_bad}): kept in eval.values, "
                                   "not judged against the target"))
    ev = _mlperf.judge(benchmark, values, round=mlperf_round or _mlperf.round_of_path(path), division=division)
    ok = status == "success"
    if ev["reached"] is not None and ev["reached"] != ok:
        warnings.append(RunWarning("mllog.target_mismatch", f"{path}: run_stop status is {status!r} but the last "
                                   f"eval {'reaches' if ev['reached'] else 'misses'} the quality target: "
                                   f"{_mlperf.verdict_text(ev)} (target from {ev['target_source']})"))
    return ev


def _system_info(path: str, system: Any, sysjson: dict[str, Any] | None,
                 warnings: list[RunWarning]) -> tuple[dict[str, Any] | None, str]:
    """The system description and where it came from: ``system=``, the MLPerf layout's
    system JSON, a ``:::SYSJSON`` line, or none (``assumed``)."""
    if system is not None:
        return _system_arg(system), "argument"
    info: Any = None
    source = "assumed"
    sj = _system_json(pathlib.Path(path))
    if sj is not None:
        try:
            info, source = json.loads(sj.read_text()), f"system json {sj}"
        except (ValueError, RecursionError):
            warnings.append(RunWarning("mllog.system_json_invalid", f"{sj}: not valid JSON; system description ignored"))
        if info is not None and not isinstance(info, dict):
            warnings.append(RunWarning("mllog.system_json_invalid", f"{sj}: not a JSON object; system "
                                       "description ignored"))
            info, source = None, "assumed"
    if info is None and sysjson is not None:
        info, source = sysjson, "SYSJSON line"
    return info, source


def _accelerators(path: str, info: dict[str, Any] | None, source: str, warnings: list[RunWarning]) -> tuple[int, str]:
    """The accelerator count (nodes x accelerators per node) and its source; 1, assumed,
    with a warning when the description does not give it."""
    n_acc = None
    if info is not None:
        nodes, per = _as_int(info.get("number_of_nodes")), _as_int(info.get("accelerators_per_node"))
        if nodes is not None and per is not None and nodes * per > MAX_ACCELERATORS:
            # one accountable record per accelerator: a corrupt count would fill memory
            raise MLLogError(path, f"the system description ({source}) counts {nodes} x {per} accelerators, "
                             f"more than {MAX_ACCELERATORS:,}", "correct number_of_nodes and "
                             "accelerators_per_node, or pass system= to read_mllog")
        if nodes is not None and per is not None and nodes * per > 0:
            n_acc = nodes * per
        else:
            warnings.append(RunWarning("mllog.system_without_accelerators", f"{path}: system description ({source}) has no usable number_of_nodes x "
                            f"accelerators_per_node ({info.get('number_of_nodes')!r} x "
                            f"{info.get('accelerators_per_node')!r})"))
    if n_acc is None:
        warnings.append(RunWarning("mllog.accelerators_assumed", f"{path}: accelerator count unknown (no system description JSON); one accelerator "
                        "assumed: pass system= to read_mllog"))
        return 1, "assumed"
    return n_acc, source


def _lifecycle(path: str, keys: _Keys, n_acc: int, start: int, end: int, status: str,
               warnings: list[RunWarning]) -> tuple[pa.Table, str, int]:
    """The lifecycle records (DESIGN §2.2), the step unit (``block`` or ``epoch``) and the
    number of eval phases."""
    rows: list[dict[str, Any]] = []
    ok = status == "success"

    def add(record: str, s: int, e: int | None, *, rank: int = -1, attempt: int | None = 0, step: int | None = None,
            kind: str | None = None) -> None:
        rows.append({"record": record, "attempt": attempt, "rank": rank, "start_ns": s, "end_ns": e,
                     "step": step, "kind": kind})

    for acc in range(n_acc):
        add("accountable", start, end, rank=acc, attempt=None)
    add("attempt", start, end, kind="completed" if ok else "failed")
    init_start, init_stop = keys.times("init_start"), keys.times("init_stop")
    if init_start:
        init_end = init_stop[-1] if init_stop else keys.times("run_start")[0]
        if not init_stop:
            warnings.append(RunWarning("mllog.init_unclosed", f"{path}: init_start without init_stop; init taken to end at run_start"))
        add("phase", init_start[0], max(init_start[0], init_end), kind="init")
    unit = "block" if "block_start" in keys.by_key else "epoch"
    steps = _pairs(keys.times(f"{unit}_start"), keys.times(f"{unit}_stop"), end)
    for k, (s, e) in enumerate(steps, 1):
        add("step", s, max(s, min(e, end)), step=k)
    evals = _pairs(keys.times("eval_start"), keys.times("eval_stop"), end)
    for s, e in evals:
        add("phase", s, e, kind="eval")
    if not ok:
        add("failure", end, None, kind="aborted" if status in ("aborted", "unknown") else status)
    order = {"accountable": 0, "attempt": 1}
    rows.sort(key=lambda x: (order.get(x["record"], 2), x["start_ns"]))
    table = pa.Table.from_pylist(
        [{**x, "block_end_ns": None, "durable_ns": None, "ok": None, "tokens": None} for x in rows],
        schema=_LIFECYCLE_SCHEMA)
    return table, unit, len(evals)


def _read_one(path: str, system: Any, mlperf_round: str | None, on_invalid: str) -> MLLogRun:
    if os.path.getsize(path) == 0:
        raise MLLogError(path, "the file is empty", "give an MLPerf result log (result_N.txt)")
    recs, sysjson, counts, bad = _parse(path, on_invalid)
    warnings: list[RunWarning] = []
    _check_lines(path, recs, counts, bad, warnings)
    keys = _Keys(recs)
    start, end, status = _attempt(path, recs, keys, warnings)
    ev = _eval(path, recs, keys, status, mlperf_round, warnings)
    epoch_spans, block_spans = _spans(keys.by_key, "epoch", end), _spans(keys.by_key, "block", end)
    info, source = _system_info(path, system, sysjson, warnings)
    n_acc, source = _accelerators(path, info, source, warnings)
    table, unit, evals = _lifecycle(path, keys, n_acc, start, end, status, warnings)
    init_start, init_stop = keys.times("init_start"), keys.times("init_stop")
    run_start, run_stop = keys.times("run_start"), keys.times("run_stop")
    return MLLogRun(
        lifecycle=table, path=path, benchmark=_text(keys.value("submission_benchmark")),
        submitter=_text(keys.value("submission_org") or (info or {}).get("submitter")),
        system=_text(keys.value("submission_platform") or (info or {}).get("system_name")),
        status=status, accelerators=n_acc, accelerators_source=source,
        accelerator_model=_text((info or {}).get("accelerator_model_name")),
        init_ns=(init_stop[-1] - init_start[0]) if init_start and init_stop else None,
        time_to_train_ns=(run_stop[-1] - run_start[0]) if run_stop else None,
        start_ns=start, end_ns=end, blocks=len(block_spans), evals=evals, warnings=warnings,
        division=_text(keys.value("submission_division")), epochs=len(epoch_spans), step_unit=unit,
        epoch_count=_plain(keys.value("epoch_count")), first_epoch_num=_plain(keys.value("first_epoch_num")),
        epoch_spans=epoch_spans, block_spans=block_spans, eval=ev, quarantine=_quarantine(path, bad))


def mllog_files(path: str | os.PathLike[str]) -> list[str]:
    """The result logs under a directory (see the module docstring)."""
    root = pathlib.Path(path)
    found = sorted(p for p in root.rglob("result_*.txt") if p.is_file())
    if not found:
        found = sorted(p for ext in ("*.txt", "*.log") for p in root.rglob(ext)
                       if p.is_file() and _MARK.encode() in p.read_bytes())
    if not found:
        raise NoInputError(f"no MLPerf result logs (result_*.txt, or *.txt/*.log with :::MLLOG lines) "
                           f"under {os.fspath(path)!r}. Fix: give a result log or a folder of them")
    return [os.fspath(p) for p in found]


def read_mllog_runs(path: str | os.PathLike[str], *, system: Any = None, mlperf_round: str | None = None,
                    on_invalid: str = "raise") -> list[MLLogRun]:
    """Read MLPerf ``:::MLLOG`` result logs into lifecycle tables, one run per log.

    Parameters
    ----------
    path : str or os.PathLike
        A result log, or a directory (one run per result file, see the module docstring).
    system : path, mapping or None
        The system description (``number_of_nodes``, ``accelerators_per_node``...); by
        default found beside the results in the MLPerf layout or in a ``:::SYSJSON`` line.
    mlperf_round : str or None
        The MLPerf Training round whose quality targets apply (``"4.0"``); by default
        the round the path names (``training_v4.0``), else the latest round pau's table
        holds (written in ``eval["assumed"]``).
    on_invalid : {"raise", "quarantine"}
        A malformed ``:::MLLOG`` line (its JSON does not parse or is nested past Python's
        stack, it is not an object, it has no ``key`` or ``time_ms``, or ``time_ms`` is not
        a finite number of ms whose ns fit int64): ``"raise"`` raises :class:`MLLogError`
        naming the file and the line; ``"quarantine"`` sets it aside in the run's
        ``quarantine`` with its reason, and the warning ``mllog.malformed_lines`` counts them.

    Returns
    -------
    list of MLLogRun
        One per log, in path order (one for a file).

    Raises
    ------
    MLLogError
        An empty log, one without (well-formed) ``:::MLLOG`` lines or without ``run_start``
        (whatever ``on_invalid`` says: such a log has no run), a malformed line with
        ``on_invalid="raise"``, a bad system description.
    NoInputError
        Nothing at ``path``, or a directory without result logs.
    """
    check_on_invalid(on_invalid)
    p = os.fspath(path)
    if os.path.isdir(p):
        return [_read_one(f, system, mlperf_round, on_invalid) for f in mllog_files(p)]
    if not os.path.isfile(p):
        raise NoInputError(f"no MLPerf result log or directory at {p!r}")
    return [_read_one(p, system, mlperf_round, on_invalid)]


def read_mllog(path: str | os.PathLike[str], *, system: Any = None, mlperf_round: str | None = None,
               on_invalid: str = "raise") -> MLLogRun:
    """Read one MLPerf ``:::MLLOG`` result log into a lifecycle table.

    Parameters and errors as :func:`read_mllog_runs`; ``path`` is a result log, or a
    directory holding exactly one.

    Returns
    -------
    MLLogRun

    Raises
    ------
    MultipleRunsError
        ``path`` is a directory of several result logs (read them with
        :func:`read_mllog_runs`).
    """
    check_on_invalid(on_invalid)
    p = os.fspath(path)
    if os.path.isdir(p):
        files = mllog_files(p)
        if len(files) != 1:
            names = ", ".join(os.path.relpath(f, p) for f in files[:5])
            raise MultipleRunsError(f"{p}: {len(files)} MLPerf result logs ({names}{' ...' if len(files) > 5 else ''}). "
                                    "Fix: read one file, or read_mllog_runs(path) for the list")
        p = files[0]
    return read_mllog_runs(p, system=system, mlperf_round=mlperf_round, on_invalid=on_invalid)[0]


def mllog_summary(runs: MLLogRun | list[MLLogRun]) -> pa.Table:
    """One row per run, what the log records: ``file, benchmark, submitter, system,
    status, accelerators, init_ns, time_to_train_ns, attempt_ns, accelerator_hours,
    epochs, blocks, target_reached`` (``eval["reached"]``: null when no target is known).

    Goodput and productive time are the ledger's figures (``pau.read(path).summary()``),
    which apply DESIGN's precedence (an eval inside a block is ``eval``); they are not
    computed here a second way."""
    runs = [runs] if isinstance(runs, MLLogRun) else list(runs)
    rows = []
    for r in runs:
        rows.append({"file": r.path, "benchmark": r.benchmark, "submitter": r.submitter, "system": r.system,
                     "status": r.status, "accelerators": r.accelerators, "init_ns": r.init_ns,
                     "time_to_train_ns": r.time_to_train_ns, "attempt_ns": r.end_ns - r.start_ns,
                     "accelerator_hours": r.accelerator_hours, "epochs": r.epochs, "blocks": r.blocks,
                     "target_reached": r.eval.get("reached")})
    return pa.Table.from_pylist(rows)
