"""What a person sees from ``pau report`` and ``pau compare`` (issue 38): one unit per
table column, counts with their singular, the HTML page's embedded figures safe from
the names they hold, its source line, and the README's command lines as written."""

from __future__ import annotations

import html.parser
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pyarrow as pa
import pytest

import pau
from pau import cli
from pau.views import html as html_report
from pau.views import text as text_view

ROOT = pathlib.Path(__file__).resolve().parents[1]
UNITS = ("ns", "µs", "ms", "s", "min", "h")


class _Scripts(html.parser.HTMLParser):
    """The text of every <script> element as a browser's HTML parser splits the page."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self._in = False

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._in = True
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in = False

    def handle_data(self, data):
        if self._in:
            self.scripts[-1] += data


def test_json_block_escapes_what_would_end_or_comment_it():
    # a kernel name that opens an HTML comment and a script: raw, the parser would read
    # the rest of the page as the JSON block's text (a <!-- <script> inside a script
    # element enters the "double escaped" state, where </script> no longer ends it)
    evil = 'k<!--<script>x</script>&amp;"'
    events = pa.table({"rank": pa.array([0, 0], pa.int32()), "start_ns": [0, 100], "end_ns": [50, 400],
                       "kind": ["compute", "compute"], "name": [evil, "gemm"]})
    run = pau.Run(events=events, metadata={"format": "synthetic", "sources": ["a"]})
    figs = dict(run.summary())
    page = html_report.render(run, figs, run.ledger(), title="t")
    start = page.index('<script type="application/json" id="pau-figures">') + len(
        '<script type="application/json" id="pau-figures">')
    body = page[start:page.index("</script>", start)]
    assert not set("<>&") & set(body), "every <, > and & inside the block is a JSON escape"
    assert json.loads(body) == json.loads(json.dumps(figs))
    assert evil in {r["name"] for r in json.loads(body)["top_kernels"]}
    # and the page's parser ends the block where it should: the page after it is markup
    p = _Scripts()
    p.feed(page)
    assert len(p.scripts) == 1 and json.loads(p.scripts[0]) == json.loads(body)
    assert page.rstrip().endswith("</script>\n</body>\n</html>")


def test_html_source_line_says_how_many_files_more():
    events = pa.table({"rank": pa.array([0], pa.int32()), "start_ns": [0], "end_ns": [5], "kind": ["compute"]})
    for n, tail in ((8, "h.json and 5 more files (8 in all)"), (4, "d.json and 1 more file (4 in all)"),
                    (3, "a.json, b.json, c.json")):
        srcs = [f"{c}.json" for c in "abcdefgh"[:n]]
        run = pau.Run(events=events, metadata={"format": "kineto", "sources": srcs})
        page = html_report.render(run, dict(run.summary()), run.ledger(), title="t")
        sub = re.search(r'<div class="sub">(.*?)</div>', page).group(1)
        assert sub.startswith("kineto · a.json, b.json, c.json") and sub.endswith(tail.split(" and ")[-1]), sub
        assert ("more" in sub) == (n > 3)


def test_counts_take_the_singular_for_one():
    assert text_view.count(1, "failure") == "1 failure" and text_view.count(2, "failure") == "2 failures"
    assert text_view.count(1_024, "rank") == "1,024 ranks" and text_view.count(0, "attempt") == "0 attempts"
    rec = {"failures": 1, "failures_per_1000_accelerator_hours": 3.0, "by_cause": {"hw": {"failures": 1}},
           "mean_to_first_step_s": 1.0, "mean_to_progress_s": 2.0, "not_recovered": 0,
           "restart_loop_attempts": 1, "waste_equivalent_accelerators": 0.5}
    out = text_view.render_recovery(rec)
    assert "1 failure," in out and "1 failures" not in out and "1 attempt in restart loops" in out


def _duration_columns(table: str) -> list[set[str]]:
    """The units of each column of a text table (columns found from its rule line)."""
    lines = table.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    spans = [m.span() for m in re.finditer(r"-+", lines[rule])]
    cols: list[set[str]] = [set() for _ in spans]
    for line in lines[rule + 1:]:
        if not line.strip() or line.startswith("---"):
            continue
        for i, (a, b) in enumerate(spans):
            cell = line[a:b + 12 if i == len(spans) - 1 else b].split()
            for j, tok in enumerate(cell):
                if tok in UNITS and j > 0:
                    cols[i].add(tok)
    return cols


def test_one_unit_per_column(capsys):
    # the built-in run: its top device work spans 36 min of compute down to 1.7 s of
    # memsets, and its activity table 0.03 min of sync beside 84 min of idle
    assert cli.main(["report", "-q"]) == 0
    out = capsys.readouterr().out
    blocks = out.split("\n\n")
    checked = 0
    for block in blocks:
        if "---" in block and any(f" {u}" in block for u in UNITS):
            for units in _duration_columns(block):
                assert len(units) <= 1, (units, block)
            checked += 1
    assert checked >= 3
    # a non-zero time small for its column is shown in the column's unit, never as 0.000
    u = text_view.column_unit([5_000_000, 327_000])
    assert text_view.in_column(327_000, u) == "0.327 ms" and u == ("ms", 10**6)
    assert text_view.in_column(327_000, ("s", 10**9)) == "0.000327 s"
    assert text_view.in_column(1, ("h", 3_600 * 10**9)).endswith(" h") and "0.000000" in text_view.in_column(
        1, ("h", 3_600 * 10**9))
    assert text_view.money(0.000698) == "$0.00070" and text_view.money(0.846) == "$0.85" and text_view.money(2.5) == "$2.50"


def _readme_commands() -> list[str]:
    """The command lines of the README's indented code blocks whose first word is pau
    (the install lines, ``pip install ...``, are not run here: pau is installed)."""
    text = (ROOT / "README.md").read_text()
    out = []
    for line in text.splitlines():
        if line.startswith("    pau ") or line.startswith("    pip install") and "&& pau" in line:
            cmd = line.strip()
            if cmd.startswith("pip"):
                cmd = cmd.split("&&", 1)[1].strip()
            out.append(cmd.split("  #")[0].split(" #")[0].strip())
    return out


def test_readme_lists_its_command_lines():
    cmds = _readme_commands()
    assert any("--gate" in c for c in cmds) and any(c.startswith("pau compare") for c in cmds)
    assert len(cmds) >= 6


@pytest.mark.parametrize("cmd", _readme_commands())
def test_readme_command_lines_run_as_written(cmd, tmp_path):
    """Each command line runs in an empty folder (tests/ reachable as in the
    repository), exits 0, and leaves no file but the ones it names (an unquoted
    ``--gate ledger.goodput>=0.4`` would leave one named ``=0.4``)."""
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    env = dict(os.environ)  # the pau this interpreter imports (installed, or an editable install)
    pau_fn = f'pau() {{ {shlex.quote(sys.executable)} -c "import sys; from pau._args import main; sys.exit(main())" "$@"; }}'
    res = subprocess.run(["bash", "-c", f"{pau_fn}\nset -e\n{cmd}"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, (cmd, res.stderr[-2000:])
    named = set(re.findall(r"(?:-o|convert \S+)\s+(\S+)", cmd)) - {"-"}
    left = {p.name for p in tmp_path.iterdir()} - {"tests"}
    assert left == named, (cmd, left)
    assert res.stdout.strip() or all((tmp_path / n).stat().st_size for n in named), cmd


def test_run_layout_snippet_of_docs_runs_as_written(tmp_path, monkeypatch):
    """docs/run.md's block opening a run folder with plain tools runs as written."""
    pytest.importorskip("duckdb")
    pytest.importorskip("polars")
    from pau import synth

    text = (ROOT / "docs" / "run.md").read_text()
    block = text.split("## The layout on disk", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    job = synth.training_job(ranks=2, steps=10, seed=0, mtbf_s=None, checkpoint_every=5, kernels_per_step=8)
    pau.Run(events=job.events, lifecycle=job.lifecycle).write(tmp_path / "run")
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(block, "docs/run.md", "exec"), scope)
    assert scope["lifecycle"].num_rows == job.lifecycle.num_rows
    assert scope["events"].num_rows == job.events.num_rows and scope["events"].schema.field("rank").type == pa.int32()


def _html_tables(page: str) -> list[list[list[str]]]:
    """The body rows of every table of a page, as cell texts."""
    out = []
    for t in re.findall(r"<tbody>(.*?)</tbody>", page, re.S):
        out.append([[html.parser.unescape(c) if hasattr(html.parser, "unescape") else c
                     for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
                    for row in re.findall(r"<tr>(.*?)</tr>", t, re.S)])
    return out


def test_html_tables_keep_one_unit_per_column(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "r.html"
    assert cli.main(["report", "--ranks", "4", "--steps", "60", "-q", "--format", "html", "-o", str(out)]) == 0
    page = out.read_text()
    checked = 0
    for rows in _html_tables(page):
        if not rows or len({len(r) for r in rows}) != 1 or rows[0][0] in ("failures", "total"):
            continue   # figure/value tables list one quantity a row
        for col in range(len(rows[0])):
            units = {c.split()[1] for c in (r[col] for r in rows)
                     if len(c.split()) >= 2 and c.split()[1] in UNITS and c.split()[0][0].isdigit()}
            assert len(units) <= 1, (col, units, rows[:3])
            checked += bool(units)
    assert checked >= 8


def test_outcome_doc_names_the_two_program_goodputs_apart():
    """docs/outcome.md: MPG's program goodput is MFU; program_goodput(...).program_goodput is
    MFU over accountable time. The page says so and never calls the second one MPG's factor."""
    text = (ROOT / "docs" / "outcome.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| MFU over")]
    assert any("`mpg(...).program_goodput`" in r and "`F_model / (peak × P)`" in r for r in rows)
    assert any("`program_goodput(...).program_goodput`" in r and "peak × A" in r for r in rows)
    assert "**Program goodput over accountable time**" not in text
    # and the figures agree with the names: MPG's program factor is program_goodput(...).mfu
    from pau import synth
    from pau.figures.goodput import mpg, program_goodput

    job = synth.training_job(ranks=2, steps=20, seed=0, mtbf_s=None, checkpoint_every=5, kernels_per_step=8)
    led = pau.Run(events=job.events, lifecycle=job.lifecycle).ledger()
    pg = program_goodput(led, 10**15, peak=10**15)
    assert mpg(led, flops=10**15, peak=10**15).program == pg.mfu != pg.program_goodput
