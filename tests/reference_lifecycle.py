"""A slow, obviously correct twin of pau's lifecycle attribution.

It replays a lifecycle second by second, per rank, in plain Python, applying the
rules of DESIGN §2.2 and docs/lifecycle.md directly. It shares no code with pau.

Input: a list of dicts, one per lifecycle record, with the keys ``record, attempt,
rank, start, end, step, block, durable, ok, kind`` (``start/end/block/durable`` are
``start_ns/end_ns/block_end_ns/durable_ns`` in small integer units -- the tests use
seconds -- and missing keys are null; ``rank`` defaults to -1 and ``ok`` to True).
``tests/lifecycle_cases.table`` turns the same dicts into a pau table in ns.

Output: :func:`attribute` gives, per rank, the list of ``(second, state, attempt,
step, cause)`` for every accountable second ``[t, t+1)`` in order. :func:`replay`
also exposes what led there (attempts, lineage, step executions).

Invalid input (what pau rejects, and what the docs leave open) raises ``Invalid``;
the property generators must never produce it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

INIT_KINDS = ("init", "compile", "data_warmup")
OVERLAY_KINDS = ("eval", "custom", "data_wait")

# precedence of the levels painted on one rank (higher wins)
OUTAGE, MEMBER, INIT_RESTORE, STEP, PHASE, CHECKPOINT = range(6)


class Invalid(ValueError):
    """Input the reference does not accept (pau rejects it, or the docs leave it open)."""


@dataclass
class Rec:
    index: int
    record: str
    attempt: int | None
    rank: int
    start: int
    end: int | None
    step: int | None
    block: int | None
    durable: int | None
    ok: bool
    kind: str | None


def _rec(i: int, d: dict) -> Rec:
    ok = d.get("ok")
    rank = d.get("rank")
    return Rec(i, d["record"], d.get("attempt"), -1 if rank is None else rank, d["start"], d.get("end"),
               d.get("step"), d.get("block"), d.get("durable"), True if ok is None else ok, d.get("kind"))


@dataclass
class Attempt:
    id: int
    start: int
    end: int            # effective end (<= as_of)
    running: bool
    completed: bool
    cause: str | None   # what rolled-back work of this attempt is charged to


@dataclass
class Execution:
    """One step execution on one rank."""
    rank: int
    attempt: int
    step: int
    start: int
    end: int            # cut at the member end
    in_flight: bool
    state: str
    cause: str | None


@dataclass
class Replay:
    as_of: int
    attempts: list               # Attempt, in order of start
    members: dict                # (attempt, rank) -> (start, end)
    accountable: dict            # rank -> sorted list of accountable seconds
    used_restore: dict           # attempt -> (step, writer attempt)
    lineage: dict                # attempt -> (base, head), in chain order from the start
    executions: list             # Execution
    seconds: dict = field(default_factory=dict)  # rank -> [(t, state, attempt, step, cause)]


def replay(rows: list, as_of: int | None = None, *, failed_restore_starts_chain: bool = False) -> Replay:
    """Attribute every accountable second of every rank.

    ``failed_restore_starts_chain``: by default an attempt "did something" (and so can
    start the lineage chain) only through a step, an ok restore (the restore it
    actually used) or a durable checkpoint; True also counts restores that failed.
    """
    recs = [_rec(i, d) for i, d in enumerate(rows)]

    # -- as_of: default is the latest instant in the table; later records are ignored
    if as_of is None:
        as_of = max(v for r in recs for v in (r.start, r.end, r.block, r.durable) if v is not None)
    recs = [r for r in recs if r.start <= as_of]

    # -- attempts
    att_rows = [r for r in recs if r.record == "attempt"]
    ids = sorted({r.attempt for r in att_rows})
    for r in recs:
        if r.record != "accountable" and r.attempt not in ids:
            raise Invalid(f"row {r.index}: attempt {r.attempt} has no attempt record")
    start, row_end, kind = {}, {}, {}
    for a in ids:
        mine = [r for r in att_rows if r.attempt == a]
        start[a] = min(r.start for r in mine)
        ends = [r.end for r in mine]
        row_end[a] = None if None in ends else max(ends)
        kinds = [r.kind for r in mine if r.kind is not None]
        kind[a] = kinds[0] if kinds else None
    order = sorted(ids, key=lambda a: (start[a], a))
    first_failure = {}
    for a in ids:
        fails = sorted((r.start, r.kind or "unknown") for r in recs if r.record == "failure" and r.attempt == a)
        if fails:
            if len(fails) > 1 and fails[0][0] == fails[1][0] and fails[0][1] != fails[1][1]:
                raise Invalid(f"attempt {a}: two failures at the same time with different causes")
            first_failure[a] = fails[0]

    attempts = []
    for i, a in enumerate(order):
        known_end = row_end[a] if row_end[a] is not None and row_end[a] <= as_of else None
        running = completed = False
        if a in first_failure:                     # a failure ends the attempt
            ft, cause = first_failure[a]
            end = ft if known_end is None else min(known_end, ft)
        elif known_end is not None:
            end = known_end
            if kind[a] in (None, "completed"):
                cause, completed = None, True
            elif kind[a] in ("failed", "preempted"):
                cause = kind[a]
            else:
                raise Invalid(f"attempt {a}: kind {kind[a]!r} with an end")
        elif i + 1 < len(order):                   # no end, not last: ends at the next start
            end, cause = start[order[i + 1]], "superseded"
        else:                                      # unknown end at as_of: running
            end, cause, running = as_of, None, True
        end = max(min(end, as_of), start[a])
        attempts.append(Attempt(a, start[a], end, running, completed, cause))
    A = {x.id: x for x in attempts}

    # -- ranks, membership, accountable time
    known = {r.rank for r in recs if r.rank >= 0}
    acc_rows = [r for r in recs if r.record == "accountable"]
    members = {}
    for r in att_rows:                             # per-rank rows first
        if r.rank >= 0 and (r.attempt, r.rank) not in members:
            e = A[r.attempt].end if r.end is None or r.end > as_of else min(r.end, A[r.attempt].end)
            members[(r.attempt, r.rank)] = (r.start, max(e, r.start))
    for r in att_rows:                             # rank -1: accountable at its start, or every known rank
        if r.rank < 0:
            if acc_rows:
                ranks = {c.rank for c in acc_rows if c.start <= r.start and (c.end is None or r.start < c.end)}
            else:
                ranks = known
                if not ranks:
                    raise Invalid(f"row {r.index}: attempt with rank -1 but no rank is known")
            for k in sorted(ranks):
                members.setdefault((r.attempt, k), (A[r.attempt].start, A[r.attempt].end))

    accountable = {}
    if acc_rows:
        for c in acc_rows:
            e = as_of if c.end is None else min(c.end, as_of)
            accountable.setdefault(c.rank, set()).update(range(c.start, e))
        for (a, k), (ms, me) in members.items():
            if not set(range(ms, me)) <= accountable.get(k, set()):
                raise Invalid(f"rank {k} is a member of attempt {a} outside its accountable time")
    else:
        for k in {k for (_, k) in members}:
            spans = [v for (a, kk), v in members.items() if kk == k]
            accountable[k] = set(range(min(s for s, _ in spans), max(e for _, e in spans)))
    accountable = {k: sorted(v) for k, v in accountable.items() if v}

    def member_ranks(r: Rec) -> list:
        if r.rank >= 0:
            if (r.attempt, r.rank) not in members:
                raise Invalid(f"row {r.index}: rank {r.rank} is not a member of attempt {r.attempt}")
            return [r.rank]
        return sorted(k for (a, k) in members if a == r.attempt)

    def window(r: Rec, k: int) -> tuple:
        ms, me = members[(r.attempt, k)]
        if not ms <= r.start <= me:
            raise Invalid(f"row {r.index}: starts at {r.start}, outside attempt {r.attempt} on rank {k}")
        return ms, me

    def cut(v, me, s):
        """An end cut at the member end (null = still open then)."""
        return max(me if v is None or v > me else v, s)

    # -- checkpoints: one per (attempt, step); shards are durable when the last is, ok if all are
    saves = {}
    for r in recs:
        if r.record == "checkpoint_save":
            saves.setdefault((r.attempt, r.step), []).append(r)

    def durable_at(key):
        """When checkpoint `key` counts (ok and durable <= as_of), else None."""
        shards = saves.get(key, [])
        if not shards or not all(s.ok for s in shards) or any(s.durable is None for s in shards):
            return None
        d = max(s.durable for s in shards)
        return d if d <= as_of else None

    # -- the restore each attempt actually used: its last ok restore, reading the latest
    #    durable save of that step made before the restore started, by another attempt
    used = {}
    for r in sorted((r for r in recs if r.record == "restore" and r.ok), key=lambda r: (r.start, r.index)):
        cands = [(durable_at(key), key[0]) for key in saves
                 if key[1] == r.step and key[0] != r.attempt
                 and durable_at(key) is not None and durable_at(key) <= r.start]
        if not cands:
            raise Invalid(f"row {r.index}: restore of step {r.step}, but no ok checkpoint was durable before")
        cands.sort()
        if len(cands) > 1 and cands[-1][0] == cands[-2][0]:
            raise Invalid(f"row {r.index}: two saves of step {r.step} durable at the same time")
        used[r.attempt] = (r.step, cands[-1][1])

    # -- the lineage chain, from the last attempt that did something
    step_rows = [r for r in recs if r.record == "step"]

    def did_something(a: int) -> bool:
        restored = (a in used) or (failed_restore_starts_chain and any(
            r.record == "restore" and r.attempt == a for r in recs))
        return (any(r.attempt == a for r in step_rows) or restored
                or any(durable_at(key) is not None for key in saves if key[0] == a))

    lineage = {}
    active = [a for a in order if did_something(a)]
    if active:
        cur = active[-1]
        base = used[cur][0] if cur in used else None
        if A[cur].completed:
            done = [r.step for r in step_rows if r.attempt == cur and r.end is not None and r.end <= A[cur].end]
            head = max(done) if done else base
        else:
            mine = [key[1] for key in saves if key[0] == cur and durable_at(key) is not None]
            head = max(mine) if mine else base
        if base is not None and head is not None and head < base:
            head = base
        while True:
            lineage[cur] = (base, head)
            if cur not in used:
                break
            head, cur = used[cur]
            if cur in lineage:
                raise Invalid("the restores form a cycle")
            base = used[cur][0] if cur in used else None

    def on_lineage(a: int, k: int) -> bool:
        if a not in lineage:
            return False
        base, head = lineage[a]
        return head is not None and k <= head and (base is None or k > base)

    last = order[-1] if order else None

    # -- step executions
    executions = []
    for r in step_rows:
        for k in member_ranks(r):
            ms, me = window(r, k)
            in_flight = r.end is None or r.end > me
            if on_lineage(r.attempt, r.step) and not in_flight:
                state, cause = "productive", None
            elif r.attempt == last and A[r.attempt].running:
                state, cause = "pending", None
            else:
                state, cause = "rolled_back", A[r.attempt].cause or "superseded"
            executions.append(Execution(k, r.attempt, r.step, r.start, cut(r.end, me, r.start), in_flight,
                                        state, cause))
    for i, x in enumerate(executions):           # half-open: touching or empty steps do not overlap
        for y in executions[i + 1:]:
            if x.rank != y.rank:
                continue
            if max(x.start, y.start) < min(x.end, y.end):
                raise Invalid(f"rank {x.rank}: step {y.step} overlaps step {x.step}")
            if x.attempt == y.attempt and (x.step == y.step or (x.start - y.start) * (x.step - y.step) < 0):
                raise Invalid(f"rank {x.rank}: steps {x.step} and {y.step} are not numbered upwards")

    # -- every labelled interval, per rank: (level, start, end, label)
    spans = {}

    def put(k, level, s, e, label):
        if e > s:
            spans.setdefault(k, []).append((level, s, e, label))

    for (a, k), (ms, me) in members.items():
        put(k, MEMBER, ms, me, ("unattributed", a, None, None))
    for e in executions:
        put(e.rank, STEP, e.start, e.end, (e.state, e.attempt, e.step, e.cause))
    first = order[0] if order else None
    for r in recs:
        if r.record not in ("phase", "restore", "checkpoint_save"):
            continue
        for k in member_ranks(r):
            ms, me = window(r, k)
            if r.record == "restore":
                put(k, INIT_RESTORE, r.start, cut(r.end, me, r.start), ("recovery.restore", r.attempt, r.step, None))
            elif r.record == "phase" and r.kind in INIT_KINDS:
                state = "initialization" if r.attempt == first else "recovery.reinit"
                put(k, INIT_RESTORE, r.start, cut(r.end, me, r.start), (state, r.attempt, None, None))
            elif r.record == "phase" and r.kind in OVERLAY_KINDS:
                put(k, PHASE, r.start, cut(r.end, me, r.start), (r.kind, r.attempt, None, None))
            elif r.record == "phase":
                raise Invalid(f"row {r.index}: unknown phase kind {r.kind!r}")
            else:
                if durable_at((r.attempt, r.step)) is None:
                    state = "checkpoint.lost"
                elif on_lineage(r.attempt, r.step):
                    state = "checkpoint"
                else:
                    state = "checkpoint.unused"
                put(k, CHECKPOINT, r.start, cut(r.block, me, r.start), (state, r.attempt, r.step, None))

    # -- replay: each accountable second of each rank gets the label of the highest level
    seconds = {}
    for k, secs in sorted(accountable.items()):
        out = []
        for t in secs:
            covering = [(lv, lab) for (lv, s, e, lab) in spans.get(k, []) if s <= t < e]
            if not covering:
                out.append((t, "recovery.outage", None, None, None))
                continue
            top = max(lv for lv, _ in covering)
            labels = {lab for lv, lab in covering if lv == top}
            if len(labels) > 1:
                raise Invalid(f"rank {k}, second {t}: records of equal precedence overlap: {labels}")
            out.append((t, *labels.pop()))
        seconds[k] = out
    res = Replay(as_of, attempts, members, accountable, used, lineage, executions)
    res.seconds = seconds
    return res


def attribute(rows: list, as_of: int | None = None, **kw) -> dict:
    """Per rank, ``[(second, state, attempt, step, cause), ...]`` for every accountable second."""
    return replay(rows, as_of, **kw).seconds


def state_totals(seconds: dict) -> dict:
    """Seconds per state, over all ranks (states with time only)."""
    out: dict = {}
    for secs in seconds.values():
        for _, state, *_ in secs:
            out[state] = out.get(state, 0) + 1
    return out


# --------------------------------------------------------------------------- kernel twins
#
# Slow twins of the Numba kernels of pau.engine._kernels that the one-pass attribution
# added; tests/test_lifecycle_kernels.py compares them on generated inputs.


def record_codes(values: list, names: tuple) -> list:
    """The index of each string among `names`, -1 for anything else (None included)."""
    return [names.index(v) if v in names else -1 for v in values]


def lifecycle_rows(table, names: tuple, kinded: list, null: int) -> tuple:
    """What the native reader (``_core.lifecycle_rows``) gives, row by row in plain
    Python: ``(other, steps)``, each a dict of column lists. ``other`` holds the rows
    whose record is not "step" (row, rec, attempt, rank, start, end, step, block_end,
    durable, ok, kind, tokens), ``steps`` the step rows (row, attempt, rank, start,
    end, step, tokens). Missing values and absent columns read as `null`, but rank
    as -1, tokens as 0 and ok as True; kind only for the records `kinded` marks."""
    cols = {}
    for name in table.column_names:
        c = table.column(name)
        cols[name] = (c.cast("int64") if str(c.type).startswith("timestamp") else c).to_pylist()

    def get(name, i, fill):
        v = cols[name][i] if name in cols else None
        return fill if v is None else v

    other = {k: [] for k in ("row", "rec", "attempt", "rank", "start", "end", "step", "block_end", "durable",
                             "ok", "kind", "tokens")}
    steps = {k: [] for k in ("row", "attempt", "rank", "start", "end", "step", "tokens")}
    for i in range(table.num_rows):
        rec = cols["record"][i]
        code = names.index(rec) if rec in names else -1
        out = steps if rec == "step" else other
        for k, name, fill in (("attempt", "attempt", null), ("rank", "rank", -1), ("start", "start_ns", null),
                              ("end", "end_ns", null), ("step", "step", null), ("tokens", "tokens", 0)):
            out[k].append(get(name, i, fill))
        out["row"].append(i)
        if out is other:
            other["rec"].append(code)
            other["block_end"].append(get("block_end_ns", i, null))
            other["durable"].append(get("durable_ns", i, null))
            other["ok"].append(get("ok", i, True))
            other["kind"].append(get("kind", i, None) if code >= 0 and kinded[code] else None)
    return other, steps


def step_reason(s, e, r, a, k, tok, null):
    """The first problem of a step row alone (None: none), as ``_core.step_codes``
    names it (``pau.engine._lifecycle._STEP_CHECKS``)."""
    return ("null start_ns" if s == null
            else "end_ns before start_ns" if e != null and e < s else "rank below -1" if r < -1
            else "missing attempt" if a == null else "missing step" if k == null
            else "negative tokens" if tok < 0 else None)


def scan_steps(start, end, rank, attempt, step, tokens, null, cut, att_lo, att_n) -> dict:
    """What ``_core.scan_steps`` reports, computed row by row in plain Python."""
    rows = list(zip(start, end, rank, attempt, step, tokens))
    good = [x[:5] for x in rows if step_reason(*x, null) is None]
    ended = [x for x in good if x[1] != null]
    keys = [(x[2], x[0]) for x in good]
    out = {
        "bad": len(rows) - len(good),
        "after": sum(1 for x in good if x[0] > cut),
        "max_start": max([x[0] for x in good], default=null),
        "max_end": max([x[1] for x in ended], default=null),
        "ordered": keys == sorted(keys),
        "neg_rank": sum(1 for x in good if x[2] == -1),
        "step_min": min([x[4] for x in good], default=2**63 - 1),
        "ranks": sorted({x[2] for x in good if x[2] >= 0}),
        "att_out": sum(1 for x in good if not 0 <= x[3] - att_lo < att_n),
        "att": {},
    }
    for j in range(att_n):
        mine = [x for x in good if x[3] == att_lo + j]
        done = [x for x in mine if x[1] != null]
        out["att"][att_lo + j] = (len(mine), max([x[4] for x in done], default=null),
                                  max([x[1] for x in done], default=null))
    return out


def attribute_pass(b, order, rank, att, start, end, step, tokens, x_rank, x_copy, rank_lo, rank_lut, att_lo, att_lut,
                   mstart, mend, m_row, base, head, on, pend, att_cause, states, count_pres, o, att_ids,
                   null, all_ranks=(), first_member=()) -> dict:
    """What ``_kernels.attribute_pass`` computes, the slow way: first every step in
    (rank, start) order checked, cut and labelled, then each rank's background cut
    at every boundary of any layer and each elementary piece labelled by the top
    layer covering it (overlay > step > background), touching pieces of one row
    merged. ``b`` and ``o``: (rank, start, end, state, attempt, step) columns. A
    visit ``j`` of row ``order[j]`` runs on rank ``x_rank[j]`` when given (a row of
    rank -1 is visited once per member rank) and counts its tokens unless
    ``x_copy[j]``. With ``all_ranks`` the visits are every row on every rank of
    ``all_ranks`` (dense order) whose membership in the row's attempt is known, the
    tokens counting on ``first_member[attempt]``. The membership of (attempt a, dense
    rank r) is at ``m_row[a] + r`` of ``mstart``/``mend``. Errors: (code, row, other row,
    rank of the visit)."""
    idx = list(order) if len(order) else list(range(len(rank)))
    if len(all_ranks):
        idx, x_rank, x_copy = [], [], []
        for d, rv in enumerate(all_ranks):
            for i in range(len(rank)):
                a = att_lut[att[i] - att_lo]
                if mstart[m_row[a] + d] != null:
                    idx.append(i)
                    x_rank.append(rv)
                    x_copy.append(d != first_member[a])
    steps = []  # (rank, start, end, state, attempt, step, cause)
    prev = last_full = None
    tok = 0
    productive_steps = set()
    for j, i in enumerate(idx):
        rv = x_rank[j] if len(x_rank) else rank[i]
        r = rank_lut[rv - rank_lo]
        a = att_lut[att[i] - att_lo]
        ms, me = mstart[m_row[a] + r], mend[m_row[a] + r]
        s = start[i]
        if ms == null:
            return {"error": (1, i, -1, rv)}
        if not ms <= s <= me:
            return {"error": (2, i, -1, rv)}
        flight = end[i] == null or end[i] > me
        e = max(me if flight else end[i], s)
        if e > s:
            if last_full is not None and last_full[0] == r and s < last_full[1]:
                return {"error": (3, i, last_full[2], rv)}
            last_full = (r, e, i)
        if prev is not None and prev[0] == r and prev[1] == a and step[i] <= prev[2]:
            return {"error": (4, i, prev[3], rv)}
        prev = (r, a, step[i], i)
        cause = -1
        if (on[a] and head[a] != null and (base[a] == null or step[i] > base[a]) and step[i] <= head[a]
                and not flight):
            state = states[0]
            tok += 0 if len(x_copy) and x_copy[j] else tokens[i]
            productive_steps.add(step[i])
        elif pend[a]:
            state = states[1]
        else:
            state, cause = states[2], att_cause[a]
        steps.append((rv, s, e, state, a, step[i], cause))
    pieces = []  # (rank, start, end, state, attempt id or None, step or None, cause or None)
    last = None  # (layer, row) of the last piece
    acc = {}
    for ib in range(len(b[0])):
        r, bs, be = b[0][ib], b[1][ib], b[2][ib]
        acc[r] = acc.get(r, 0) + max(be - bs, 0)
        mine_s = [(j, x) for j, x in enumerate(steps) if x[0] == r]
        mine_o = [(j, o[1][j], o[2][j]) for j in range(len(o[0])) if o[0][j] == r]
        cuts = {bs, be} | {v for _, x in mine_s for v in x[1:3] if bs < v < be} \
            | {v for _, s_, e_ in mine_o for v in (s_, e_) if bs < v < be}
        cuts = sorted(cuts)
        for x, y in zip(cuts, cuts[1:]):
            top = [(2, j) for j, s_, e_ in mine_o if s_ <= x < e_] or \
                  [(1, j) for j, st_ in mine_s if st_[1] <= x < st_[2]] or [(0, ib)]
            layer, row = top[0]
            if layer == 2:
                lab = (o[3][row], o[4][row], o[5][row], -1)
            elif layer == 1:
                lab = steps[row][3:7]
            else:
                lab = (b[3][row], b[4][row], b[5][row], -1)
            if pieces and last == (layer, row) and pieces[-1][2] == x and pieces[-1][0] == r:
                pieces[-1] = pieces[-1][:2] + (y,) + pieces[-1][3:]
                continue
            state, a, sp, c = (int(v) for v in lab)
            pieces.append((int(r), int(x), int(y), state, int(att_ids[a]) if a >= 0 else None,
                           sp if sp != null else None, c if c >= 0 else None))
            last = (layer, row)
    return {"pieces": pieces, "acc": [(int(r), int(v)) for r, v in acc.items()], "tokens": tok,
            "preserved": len(productive_steps) if count_pres else 0}


def fill_nulls(values: list, fill: int) -> list:
    """An Arrow array's values (``to_pylist()``) with ``fill`` for each null."""
    return [fill if v is None else v for v in values]


def expand_ranks(rank: list, attempt: list, m_ids: list, m_off: list, m_ranks: list) -> tuple:
    """What ``_kernels.expand_ranks`` returns, as lists ``(src, rank, copy)``: the rows
    with a rank of their own (>= 0) in row order, then each row of rank < 0, in row
    order, once per member rank of its attempt, in member order (attempt
    ``m_ids[j]`` has the ranks ``m_ranks[m_off[j]:m_off[j + 1]]``; an attempt not
    in ``m_ids`` has none); ``copy`` is True for all copies of a row but its first."""
    members = {a: list(m_ranks[m_off[j]:m_off[j + 1]]) for j, a in enumerate(m_ids)}
    out = [(i, r, False) for i, r in enumerate(rank) if r >= 0]
    for i, (r, a) in enumerate(zip(rank, attempt)):
        if r < 0:
            out += [(i, k, c > 0) for c, k in enumerate(members.get(a, []))]
    return [x[0] for x in out], [x[1] for x in out], [x[2] for x in out]



def expand_ordered(rank: list, attempt: list, start: list, m_ids: list, m_off: list, m_ranks: list,
                   rank_lo: int, rank_lut: list, dense: bool) -> tuple:
    """What ``_kernels.expand_ordered`` returns, as ``(row, rank, copy, ok)``: the
    visits of :func:`expand_ranks` -- a row of rank >= 0 once, a row of rank < 0
    once per member rank of its attempt, ``copy`` on all visits of a row but its
    first -- listed row by row (a row's member visits in member order), then sorted
    stably by dense rank (``rank_lut[r - rank_lo]``, or ``r`` itself if ``dense``).
    ``ok``: within each rank the visits' starts never go down."""
    members = {a: list(m_ranks[m_off[j]:m_off[j + 1]]) for j, a in enumerate(m_ids)}
    visits = []  # (row, rank, copy)
    for i, (r, a) in enumerate(zip(rank, attempt)):
        if r >= 0:
            visits.append((i, r, False))
        else:
            visits += [(i, k, c > 0) for c, k in enumerate(members.get(a, []))]

    def dense_rank(r):
        return r if dense else rank_lut[r - rank_lo]

    visits = sorted(visits, key=lambda v: dense_rank(v[1]))  # sorted() is stable
    ok = True
    for d in {dense_rank(v[1]) for v in visits}:
        starts = [start[v[0]] for v in visits if dense_rank(v[1]) == d]
        ok = ok and starts == sorted(starts)
    return [v[0] for v in visits], [v[1] for v in visits], [v[2] for v in visits], ok


def state_cells(h_window, h_mask, h_duration, w_rank, w_state, act_of_mask, n_ranks, n_states, n_act) -> list:
    """The full ledger's cells over the state runs (``_core.crossed_cells`` with the
    runs as windows, the exact way), as a list: the duration of each histogram row
    summed, in Python ints, by (rank of its window, state of its
    window, activity of its mask), laid out at ``(rank * n_states + state) * n_act +
    activity``; rows of window -1 (outside every window) left out."""
    sums = {}
    for w, m, d in zip(h_window, h_mask, h_duration):
        if w == -1:
            continue
        key = (w_rank[w], w_state[w], act_of_mask[m])
        sums[key] = sums.get(key, 0) + d
    out = [0] * (n_ranks * n_states * n_act)
    for (r, s, a), d in sums.items():
        out[(r * n_states + s) * n_act + a] = d
    return out


def row_checks(rec, start, end, block_end, durable, rank, attempt, step, null, acc, needs_step) -> list:
    """The first problem of each row alone, by name (None: none), looked for in this
    order: an unknown record (code < 0), a null start, an end, block end or durable
    time before the start (any int64 time is valid), a rank below -1, no attempt (all
    but accountable rows need one), no step where the record needs one
    (``needs_step[code]``), an accountable row without a rank of its own."""
    out = []
    for r, s, e, b, d, k, a, p in zip(rec, start, end, block_end, durable, rank, attempt, step):
        if r < 0:
            why = "unknown record"
        elif s == null:
            why = "null start_ns"
        elif e != null and e < s:
            why = "end_ns before start_ns"
        elif b != null and b < s:
            why = "block_end_ns before start_ns"
        elif d != null and d < s:
            why = "durable_ns before start_ns"
        elif k < -1:
            why = "rank below -1"
        elif r != acc and a == null:
            why = "missing attempt"
        elif needs_step[r] and p == null:
            why = "missing step"
        elif r == acc and k < 0:
            why = "accountable rank must be >= 0"
        else:
            why = None
        out.append(why)
    return out


def paint(rank, start, end, level, order) -> list:
    """What ``_kernels.paint`` computes, the slow way: per rank, every elementary
    piece between consecutive boundaries goes to the covering interval of the highest
    level, then the later start, then the later row; touching pieces of one row
    merge; instants no interval covers give nothing. ``order`` only says which rows
    there are (all of them): the answer does not depend on it."""
    out = []  # (rank, start, end, row)
    for r in sorted({int(rank[i]) for i in order}):
        rows = [int(i) for i in order if rank[i] == r]
        cuts = sorted({int(start[i]) for i in rows} | {int(end[i]) for i in rows})
        for x, y in zip(cuts, cuts[1:]):
            cover = [i for i in rows if start[i] <= x < end[i]]
            if not cover:
                continue
            win = max(cover, key=lambda i: (int(level[i]), int(start[i]), i))
            if out and out[-1][0] == r and out[-1][3] == win and out[-1][2] == x:
                out[-1] = (r, out[-1][1], y, win)
            else:
                out.append((r, x, y, win))
    return out


def state_runs(rank, start, end, state) -> list:
    """What ``_core.state_runs`` computes: consecutive intervals of one rank and
    one state that touch, merged."""
    out = []
    for r, s, e, k in zip(rank, start, end, state):
        if out and out[-1][0] == r and out[-1][3] == k and out[-1][2] == s:
            out[-1] = (r, out[-1][1], e, k)
        else:
            out.append((r, s, e, k))
    return [tuple(int(v) for v in x) for x in out]


def cut_times(rows: list, as_of, has_rank: bool = True) -> list:
    """What ``pau.engine._crossing.cuts`` gives for a lifecycle of rows in table order (keys
    ``record, rank, start_ns, end_ns, block_end_ns, durable_ns``; None is null):
    every time of a row that is not a step; the start of a step row unless the step
    row of the same rank before it (in table order, other rows between or not) ends
    where it starts, and its end unless the next step row of the same rank starts
    where it ends; the end of each step row whose ``step`` a row that is not a step
    names; ``as_of``. Any int64 is a time. A null time is the int64 minimum and a
    null rank -2 (a missing rank column: -1 everywhere), for these comparisons too:
    each rank value, -1 and -2 included, is its own; a null time is no cut."""
    null = -(2**63)

    def t(r, key):
        return null if r.get(key) is None else r[key]

    def rank(r):
        return -1 if not has_rank else -2 if r.get("rank") is None else r["rank"]

    steps = [(i, r) for i, r in enumerate(rows) if r.get("record") == "step"]
    out = set()
    for j, (i, r) in enumerate(steps):
        before = [x for _, x in steps[:j] if rank(x) == rank(r)]
        after = [x for _, x in steps[j + 1:] if rank(x) == rank(r)]
        if not (before and t(before[-1], "end_ns") == t(r, "start_ns")):
            out.add(t(r, "start_ns"))
        if not (after and t(after[0], "start_ns") == t(r, "end_ns")):
            out.add(t(r, "end_ns"))
    named = {r["step"] for r in rows if r.get("record") != "step" and r.get("step") is not None}
    for _, r in steps:
        if r.get("step") is not None and r["step"] in named:
            out.add(t(r, "end_ns"))
    for r in rows:
        if r.get("record") != "step":
            out |= {t(r, k) for k in ("start_ns", "end_ns", "block_end_ns", "durable_ns")}
    if as_of is not None:
        out.add(as_of)
    return sorted(v for v in out if v != null)


def tidy_cells(cells, ranks, n_states, n_act) -> list:
    """Dense cells (laid out as :func:`state_cells`) as the native core returns them:
    the non-zero ones in index order, as ``(rank, state, activity, duration)``."""
    return [(int(ranks[i // (n_states * n_act)]), (i // n_act) % n_states, i % n_act, d)
            for i, d in enumerate(cells) if d]


def crossed_cells(rows, cuts, ranks, intervals, act_of_mask, idle, n_states, n_act):
    """What ``_core.crossed_cells`` returns over the cuts: ``(ok, cells)``. ``rows`` are the
    sweep's ``(rank, window, mask, duration)``; window w is ``[cuts[w], cuts[w+1])``;
    ``intervals`` are ``(rank, start, end, state)`` in rank and time order. Cells as
    :func:`state_cells`: each run's time (:func:`state_runs`) as idle, then each busy
    row's time moved to its activity in the run its window lies in (a window overlapping
    no run counts nowhere). Not ok (cells None) when a busy row's window overlaps a run
    without lying inside it, or a run lies outside ``[cuts[0], cuts[-1]]``."""
    runs = state_runs(*(list(c) for c in zip(*intervals))) if intervals else []
    pos = {int(r): p for p, r in enumerate(ranks)}
    cells = [0] * (len(pos) * n_states * n_act)
    for r, s, e, k in runs:
        if r not in pos or not len(cuts) or s < cuts[0] or e > cuts[-1]:
            return False, None
        cells[(pos[r] * n_states + k) * n_act + idle] += e - s
    for r, w, m, d in rows:
        if m == 0 or w < 0 or r not in pos:
            continue
        a, b = cuts[w], cuts[w + 1]
        over = [x for x in runs if x[0] == r and x[1] < b and x[2] > a]
        if not over:
            continue
        if len(over) > 1 or not (over[0][1] <= a and b <= over[0][2]):
            return False, None
        base = (pos[r] * n_states + over[0][3]) * n_act
        cells[base + act_of_mask[m]] += d
        cells[base + idle] -= d
    return True, cells
