"""A synthetic fleet of jobs over weeks (DESIGN §7): the scheduler's jobs table and each
profiled job's lifecycle. The model is documented in docs/fleet.md ("A synthetic fleet")."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pau.errors import OptionError
from pau.readers.scheduler import JOB_LIFECYCLE_SCHEMA, JOBS_SCHEMA
from pau.synth._common import _NULL, _S, PathLike

DEFAULT_FLEET_START_NS = 1_704_067_200 * 10**9  # 2024-01-01T00:00:00Z
#: The sacct fields :meth:`SyntheticFleet.sacct_text` writes.
FLEET_SACCT_FIELDS = ("JobID|Cluster|Partition|Account|User|State|ExitCode|Restarts|Submit|Eligible|Start|End|"
                      "NNodes|AllocTRES")


@dataclass
class SyntheticFleet:
    """A synthetic fleet: see :func:`fleet`.

    Attributes
    ----------
    jobs : pyarrow.Table
        The scheduler's jobs (``pau.readers.JOBS_SCHEMA``), one row per job, in submit order.
    lifecycle : pyarrow.Table
        The lifecycles of the profiled jobs (``pau.readers.JOB_LIFECYCLE_SCHEMA``: each
        job its own lineage), sorted by job.
    profiled : numpy.ndarray
        Per row of ``jobs``, whether the job has a run (its lifecycle).
    params : dict
        The arguments of :func:`fleet`.
    """

    jobs: pa.Table
    lifecycle: pa.Table
    profiled: np.ndarray
    params: dict[str, Any]

    def sacct_text(self) -> str:
        """The jobs as ``sacct --parsable2`` prints them (UTC times, whole seconds;
        fields :data:`FLEET_SACCT_FIELDS`): ``pau.readers.read_sacct_jobs(..., tz="UTC")``
        reads back :attr:`jobs`."""
        j = self.jobs

        def times(col: str) -> list[str]:
            return list(np.datetime_as_string(np.asarray(j[col], np.int64).astype("datetime64[ns]"), unit="s"))

        n = np.asarray(j["accelerators"], np.float64).astype(np.int64)
        tres = [f"cpu={8 * g},gres/gpu={g},gres/gpu:{t}={g}" for g, t in zip(n.tolist(), j["accelerator_type"].to_pylist())]
        cols = [j["job"].to_pylist(), j["cluster"].to_pylist(), j["partition"].to_pylist(), j["team"].to_pylist(),
                j["user"].to_pylist(), j["state"].to_pylist(), [f"{c}:0" for c in j["exit_code"].to_pylist()],
                [str(r) for r in j["restarts"].to_pylist()], times("submit_ns"), times("eligible_ns"),
                times("start_ns"), times("end_ns"), [str(x) for x in j["nodes"].to_pylist()], tres]
        return "\n".join([FLEET_SACCT_FIELDS, *("|".join(r) for r in zip(*cols))]) + "\n"

    def write(self, folder: PathLike, *, sacct: bool = True, runs: bool = True) -> dict[str, int]:
        """Write the fleet's records as a user's files would be: ``sacct/jobs.txt`` (the
        jobs, :meth:`sacct_text`) and, per profiled job, ``runs/<cluster>/<job>/`` in pau's
        run layout (its lifecycle, and ``job``, ``cluster``, ``accelerators`` and the
        accelerator's model in the metadata): ``pau ingest FOLDER`` reads both. Returns the
        counts written (``jobs``, ``runs``)."""
        out = os.fspath(folder)
        done = {"jobs": 0, "runs": 0}
        if sacct:
            os.makedirs(os.path.join(out, "sacct"), exist_ok=True)
            with open(os.path.join(out, "sacct", "jobs.txt"), "w") as f:
                f.write(self.sacct_text())
            done["jobs"] = self.jobs.num_rows
        if not runs or self.lifecycle.num_rows == 0:
            return done
        lc = self.lifecycle
        names = np.asarray(lc["job"].to_numpy(zero_copy_only=False))
        cut = np.flatnonzero(names[1:] != names[:-1]) + 1
        bounds = np.concatenate([[0], cut, [names.size]])
        info = {job: (c, int(a), t) for job, c, a, t in zip(self.jobs["job"].to_pylist(), self.jobs["cluster"].to_pylist(),
                                                             self.jobs["accelerators"].to_pylist(),
                                                             self.jobs["accelerator_type"].to_pylist())}
        body = lc.drop(["job"])
        columns = body.column_names
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):  # one folder per run: a loop per file
            job = str(names[a])
            cluster, acc, atype = info[job]
            path = os.path.join(out, "runs", cluster, job)
            os.makedirs(path, exist_ok=True)
            pq.write_table(body.slice(a, b - a), os.path.join(path, "lifecycle.parquet"))
            doc = {"pau_run_layout": 1, "tables": {"lifecycle": columns}, "warnings": [],
                   "metadata": {"format": "synthetic", "job": job, "cluster": cluster, "accelerators": acc,
                                "accelerator_model": atype}}
            with open(os.path.join(path, "pau-run.json"), "w") as f:
                json.dump(doc, f, indent=1, sort_keys=True)
                f.write("\n")
            done["runs"] += 1
        return done


def _lognormal_s(rng: np.random.Generator, median_s: float, sigma: float, n: int) -> np.ndarray:
    return np.exp(rng.normal(math.log(median_s), sigma, n))


def fleet(
    jobs: int = 100_000,
    *,
    seed: int = 0,
    clusters: tuple[str, ...] = ("east", "west", "lab"),
    accelerator_types: tuple[str, ...] = ("H100", "A100", "MI300X"),
    cluster_weights: tuple[float, ...] | None = None,
    teams: int = 12,
    users_per_team: int = 5,
    days: float = 28.0,
    start_ns: int = DEFAULT_FLEET_START_NS,
    mean_log2_accelerators: float = 1.5,
    max_accelerators: int = 4096,
    accelerators_per_node: int = 8,
    length_median_h: float = 2.0,
    length_sigma: float = 1.2,
    max_length_h: float = 336.0,
    failures_per_accelerator_hour: float = 3e-5,
    checkpoint_every_h: float | None = 1.0,
    checkpoint_cost_s: int = 30,
    init_s: int = 300,
    reinit_s: int = 120,
    restore_s: int = 60,
    outage_s: int = 300,
    max_attempts: int = 20,
    queue_median_s: float = 300.0,
    queue_sigma: float = 1.5,
    profiled: float = 0.1,
) -> SyntheticFleet:
    """A synthetic fleet of ``jobs`` training jobs: the scheduler's jobs table and the
    lifecycle of the profiled ones (``docs/fleet.md``, "A synthetic fleet").

    Every time is a whole second. Jobs arrive uniformly over ``days`` from ``start_ns``
    (a Poisson process), each on a cluster (``cluster_weights``, default equal) whose
    accelerators are ``accelerator_types[k]`` (cycled), for a team (Zipf weights: team
    ``t`` ∝ 1/(t+1)) and one of its users. Size: ``2**k`` accelerators, ``k`` geometric
    with mean ``mean_log2_accelerators`` capped at ``log2(max_accelerators)`` (a power law
    in the count: heavy-tailed). Work: log-normal seconds (median ``length_median_h``,
    ``length_sigma``), from 60 s to ``max_length_h``, cut in equal segments of at most
    ``checkpoint_every_h`` each followed by a blocking checkpoint of ``checkpoint_cost_s``
    (durable when it ends; None: no checkpoint, a failure loses all the work). Queue:
    log-normal (``queue_median_s``, ``queue_sigma``) from submit to start (no capacity
    model). Each attempt begins with ``init_s`` (later ones ``reinit_s``, then a restore of
    ``restore_s`` from the last durable checkpoint) and fails after an exponential time of
    rate ``failures_per_accelerator_hour × accelerators`` (Poisson failures per
    accelerator-hour); the next attempt starts ``outage_s`` later. After ``max_attempts``
    failed attempts the job ends ``FAILED``. The Slurm job spans every attempt: its
    allocation is accelerators × (end of the last attempt − start of the first).
    ``profiled``: the share of jobs with a run (their lifecycle); the others are jobs with
    no run. Deterministic by ``seed``; vectorised over jobs (a loop over attempt numbers).
    """
    params = dict(locals())
    n = _check_fleet(params)
    rng = np.random.default_rng(seed)
    d = _draw_jobs(rng, n, params)
    runs = _run_attempts(rng, d, params)
    dur_ns = (runs.end - d.start) * _S
    if n and float(d.acc.max()) * float(dur_ns.max()) >= 2**63:
        raise OptionError("fleet: a job's allocation passes int64 ns: lower max_accelerators or max_length_h")
    jobs_t = _jobs_table(d, runs, dur_ns, params)
    lifecycle = _fleet_lifecycle(runs.rows, d.prof, d.acc, d.start, runs.end, start_ns, jobs_t["job"])
    return SyntheticFleet(jobs_t, lifecycle, d.prof, params)


def _check_fleet(params: dict[str, Any]) -> int:
    """The number of jobs, once the arguments :func:`fleet` checks are right."""
    jobs, top = params["jobs"], params["max_accelerators"]
    if jobs < 0:
        raise OptionError(f"fleet: jobs = {jobs}: expected a count")
    if top < 1 or top & (top - 1):
        raise OptionError(f"fleet: max_accelerators = {top}: expected a power of two")
    if not params["clusters"] or not params["accelerator_types"] or params["teams"] < 1 \
            or params["users_per_team"] < 1:
        raise OptionError("fleet: give at least one cluster, accelerator type, team and user")
    return int(jobs)


@dataclass
class _Jobs:
    """The jobs' draws: cluster, team and user, accelerators, work (in checkpointed
    segments), submit and start (seconds from the fleet's start), failure rate, profiled."""

    cl: np.ndarray
    team: np.ndarray
    user: np.ndarray
    acc: np.ndarray
    nseg: np.ndarray
    seg: np.ndarray
    period: np.ndarray
    cost: int
    submit: np.ndarray
    queue: np.ndarray
    start: np.ndarray
    rate: np.ndarray
    prof: np.ndarray


def _draw_jobs(rng: np.random.Generator, n: int, params: dict[str, Any]) -> _Jobs:
    clusters, weights, teams = params["clusters"], params["cluster_weights"], params["teams"]
    w = np.full(len(clusters), 1 / len(clusters)) if weights is None else np.asarray(weights, float)
    if w.shape != (len(clusters),) or (w < 0).any() or w.sum() <= 0:
        raise OptionError("fleet: cluster_weights: one non-negative weight per cluster")
    cl = rng.choice(len(clusters), size=n, p=w / w.sum())
    tw = 1.0 / np.arange(1, teams + 1)
    team = rng.choice(teams, size=n, p=tw / tw.sum())
    user = team * params["users_per_team"] + rng.integers(0, params["users_per_team"], n)
    maxk = int(params["max_accelerators"]).bit_length() - 1
    lg = np.minimum(rng.geometric(1.0 / (1.0 + params["mean_log2_accelerators"]), n) - 1, maxk)
    acc = np.left_shift(np.int64(1), lg.astype(np.int64))
    work = np.clip(np.round(_lognormal_s(rng, params["length_median_h"] * 3_600, params["length_sigma"], n)), 60,
                   max(60, int(params["max_length_h"] * 3_600))).astype(np.int64)
    if params["checkpoint_every_h"]:
        every = max(1, int(round(params["checkpoint_every_h"] * 3_600)))
        nseg = np.maximum(1, -(-work // every))
        cost = int(params["checkpoint_cost_s"])
    else:
        nseg, cost = np.ones(n, np.int64), 0
    seg = np.maximum(1, work // nseg)
    submit = np.sort(rng.integers(0, max(1, int(params["days"] * 86_400)), n)).astype(np.int64)
    queue = np.round(_lognormal_s(rng, params["queue_median_s"], params["queue_sigma"], n)).astype(np.int64)
    rate = params["failures_per_accelerator_hour"] * acc / 3_600.0  # failures per second
    prof = rng.random(n) < params["profiled"]
    return _Jobs(cl, team, user, acc, nseg, seg, seg + cost, cost, submit, queue, submit + queue, rate, prof)


class _Rows:
    """The lifecycle rows of the profiled jobs, emitted attempt by attempt (seconds)."""

    def __init__(self) -> None:
        self.cols: dict[str, list[np.ndarray]] = {k: [] for k in ("record", "job", "attempt", "start", "end",
                                                                  "step", "durable", "kind")}

    def emit(self, record: str, job: np.ndarray, attempt: int, s: np.ndarray, e: np.ndarray,
             step: np.ndarray | None = None, durable: np.ndarray | None = None, kind: np.ndarray | None = None
             ) -> None:
        rows, m = self.cols, np.asarray(job).size
        rows["record"].append(np.full(m, record, object))
        rows["job"].append(np.asarray(job, np.int64))
        rows["attempt"].append(np.broadcast_to(np.asarray(attempt, np.int64), (m,)))
        rows["start"].append(np.asarray(s, np.int64))
        rows["end"].append(np.asarray(e, np.int64))
        rows["step"].append(np.full(m, _NULL, np.int64) if step is None else np.asarray(step, np.int64))
        rows["durable"].append(np.full(m, _NULL, np.int64) if durable is None else np.asarray(durable, np.int64))
        rows["kind"].append(np.full(m, None, object) if kind is None else np.asarray(kind, object))


@dataclass
class _Runs:
    """What the attempts made: each job's end, attempts and success, and the rows."""

    end: np.ndarray
    attempts: np.ndarray
    ok: np.ndarray
    rows: _Rows


def _run_attempts(rng: np.random.Generator, d: _Jobs, params: dict[str, Any]) -> _Runs:
    """Every job's attempts, vectorised over the jobs still running (a loop over attempt numbers)."""
    n = d.start.size
    init_s, reinit_s, restore_s = params["init_s"], params["reinit_s"], params["restore_s"]
    t = d.start.copy()
    done = np.zeros(n, np.int64)
    runs = _Runs(np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool), _Rows())
    active = np.ones(n, bool)
    for a in range(params["max_attempts"]):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        setup = init_s if a == 0 else reinit_s
        restores = (done[idx] > 0) & (a > 0)
        w0 = t[idx] + setup + np.where(restores, restore_s, 0)
        left = d.nseg[idx] - done[idx]
        finish = w0 + left * d.period[idx]
        with np.errstate(divide="ignore"):
            ttf = np.where(d.rate[idx] > 0, rng.exponential(1.0, idx.size) / np.maximum(d.rate[idx], 1e-300), np.inf)
        fail = t[idx] + np.maximum(1, np.ceil(np.minimum(ttf, 1e15))).astype(np.int64)
        fails = fail < finish
        att_end = np.where(fails, fail, finish)
        ran = np.maximum(att_end - w0, 0)
        durable = np.where(fails, np.minimum(ran // d.period[idx], left), left)
        emitted = np.where(fails, np.minimum(-(-ran // d.period[idx]), left), left)
        p = d.prof[idx]
        if p.any():
            j, ts, te, base = idx[p], t[idx][p], att_end[p], done[idx][p]
            rows = runs.rows
            rows.emit("attempt", j, a, ts, te, kind=np.where(fails[p], "failed", "completed"))
            rows.emit("phase", j, a, ts, ts + setup, kind=np.full(j.size, "init", object))
            r = restores[p] & (ts + setup < te)
            rows.emit("restore", j[r], a, (ts + setup)[r], (ts + setup + restore_s)[r], step=base[r])
            _emit_steps(rows, d, a, j, w0[p], te, base, emitted[p])
        done[idx] += durable
        runs.attempts[idx] = a + 1
        runs.end[idx] = att_end
        fin = idx[~fails]
        runs.ok[fin] = True
        active[fin] = False
        t[idx[fails]] = fail[fails] + params["outage_s"]
    return runs


def _emit_steps(rows: _Rows, d: _Jobs, a: int, j: np.ndarray, w0: np.ndarray, te: np.ndarray, base: np.ndarray,
                k: np.ndarray) -> None:
    """Attempt ``a``'s step rows of the jobs ``j`` (``k`` steps each from ``w0``, after
    ``base``) and their checkpoints, durable when written before the attempt's end ``te``."""
    row = np.repeat(np.arange(j.size), k)
    i = np.arange(row.size) - np.repeat(np.cumsum(k) - k, k)
    s0 = w0[row] + i * d.period[j][row]
    rows.emit("step", j[row], a, s0, s0 + d.seg[j][row], step=base[row] + i + 1)
    if d.cost:
        c0 = s0 + d.seg[j][row]
        c = c0 < te[row]
        c1 = c0 + d.cost
        rows.emit("checkpoint_save", j[row][c], a, c0[c], c1[c], step=(base[row] + i + 1)[c],
                  durable=np.where(c1 <= te[row], c1, _NULL)[c])


def _jobs_table(d: _Jobs, runs: _Runs, dur_ns: np.ndarray, params: dict[str, Any]) -> pa.Table:
    """The scheduler's jobs table (``JOBS_SCHEMA``), one row per job."""
    n, types = d.start.size, params["accelerator_types"]
    start_ns: int = params["start_ns"]
    ok = runs.ok

    def ns(x: np.ndarray) -> np.ndarray:
        return start_ns + x * _S

    return pa.table({
        "job": pa.array((np.arange(n) + 1_000_000).astype(str), pa.string()),
        "cluster": pa.array(np.asarray(params["clusters"], object)[d.cl], pa.string()),
        "scheduler": pa.array(np.full(n, "slurm", object), pa.string()),
        "user": pa.array(np.char.add("user", d.user.astype(str)).astype(object), pa.string()),
        "team": pa.array(np.char.add("team", np.char.zfill(d.team.astype(str), 2)).astype(object), pa.string()),
        "partition": pa.array(np.full(n, "gpu", object), pa.string()),
        "state": pa.array(np.where(ok, "COMPLETED", "FAILED").astype(object), pa.string()),
        "exit_code": pa.array(np.where(ok, 0, 1).astype(np.int32)),
        "restarts": pa.array((runs.attempts - 1).astype(np.int32)),
        "submit_ns": pa.array(ns(d.submit)), "eligible_ns": pa.array(ns(d.submit)),
        "start_ns": pa.array(ns(d.start)), "end_ns": pa.array(ns(runs.end)),
        "accelerators": pa.array(d.acc.astype(np.float64)),
        "accelerator_type": pa.array(np.asarray(types, object)[d.cl % len(types)], pa.string()),
        "nodes": pa.array((-(-d.acc // params["accelerators_per_node"])).astype(np.int32)),
        "queue_ns": pa.array(d.queue * _S), "allocated_accelerator_ns": pa.array(d.acc * dur_ns),
    }, schema=JOBS_SCHEMA)


def _fleet_lifecycle(emitted: _Rows, prof: np.ndarray, acc: np.ndarray, start: np.ndarray, end: np.ndarray,
                     start_ns: int, names: pa.ChunkedArray) -> pa.Table:
    """The rows emitted, with an ``accountable`` row per rank of each profiled job (its
    first attempt's start to its last one's end), sorted by job then start."""
    rows = emitted.cols

    def ns(x: np.ndarray) -> np.ndarray:
        return start_ns + x * _S

    def nul(x: np.ndarray) -> pa.Array:
        return pa.array(x, pa.int64(), mask=x == _NULL)

    pj = np.flatnonzero(prof)
    reps = acc[pj]
    aj = np.repeat(pj, reps)
    rank = np.arange(aj.size) - np.repeat(np.cumsum(reps) - reps, reps)
    if not rows["job"]:
        cols = {k: np.zeros(0, np.int64) for k in ("job", "attempt", "start", "end", "step", "durable")}
        cols.update(record=np.zeros(0, object), kind=np.zeros(0, object))
    else:
        cols = {k: np.concatenate(v) for k, v in rows.items()}
    m = cols["job"].size
    job = np.concatenate([aj, cols["job"]])
    record = np.concatenate([np.full(aj.size, "accountable", object), cols["record"]])
    attempt = np.concatenate([np.full(aj.size, _NULL, np.int64), cols["attempt"]])
    rk = np.concatenate([rank, np.full(m, -1, np.int64)])
    s = np.concatenate([start[aj], cols["start"]])
    e = np.concatenate([end[aj], cols["end"]])
    step = np.concatenate([np.full(aj.size, _NULL, np.int64), cols["step"]])
    durable = np.concatenate([np.full(aj.size, _NULL, np.int64), cols["durable"]])
    kind = np.concatenate([np.full(aj.size, None, object), cols["kind"]])
    order = np.lexsort((rk, s, job))
    job, record, attempt, rk, s, e, step, durable, kind = (x[order] for x in (job, record, attempt, rk, s, e, step,
                                                                             durable, kind))
    ckpt = record == "checkpoint_save"
    return pa.table({
        "record": pa.array(record, pa.string()),
        "attempt": pa.array(np.where(attempt == _NULL, 0, attempt).astype(np.int32), mask=attempt == _NULL),
        "rank": pa.array(rk.astype(np.int32)),
        "start_ns": pa.array(ns(s)), "end_ns": pa.array(ns(e)),
        "step": nul(step),
        "block_end_ns": pa.array(ns(e), mask=~ckpt),
        "durable_ns": pa.array(np.where(durable == _NULL, 0, ns(np.where(durable == _NULL, 0, durable))),
                               mask=durable == _NULL),
        "ok": pa.nulls(job.size, pa.bool_()),
        "kind": pa.array(kind, pa.string()),
        "tokens": pa.nulls(job.size, pa.int64()),
        "job": names.combine_chunks().take(pa.array(job, pa.int64())) if job.size else pa.array([], pa.string()),
    }, schema=JOB_LIFECYCLE_SCHEMA)
