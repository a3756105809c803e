"""The HTML report: the figures it holds, escaping, and what a real browser draws.

The browser tests render pages in headless Chromium (Debian's ``chromium``; ``.ci/run``
installs it). Without it they skip, except under CI (``CI`` set), where a missing
browser fails. Screenshots go to ``$PAU_SCREENSHOTS`` when it is set, for a person to
look at.
"""

from __future__ import annotations

import html
import json
import os
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pyarrow as pa
import pytest

import pau
from pau import cli, synth
from pau.views import html as html_report, plots

from shared_data import shared

matplotlib = pytest.importorskip("matplotlib")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _figures_in(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="pau-figures">(.*?)</script>', page, re.S)
    assert m, "the page embeds its figures"
    return json.loads(m.group(1).replace("<\\/", "</"))


def _report(args: list[str], tmp_path: pathlib.Path, capsys) -> str:
    args = args if args[0] == "report" else ["report"] + args
    out = tmp_path / "report.html"
    assert cli.main(args + ["--format", "html", "-o", str(out)]) == 0
    capsys.readouterr()
    return out.read_text()


def _json_report(args: list[str], capsys) -> dict:
    args = args if args[0] == "report" else ["report"] + args
    assert cli.main(args + ["--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _small_builtin() -> list[str]:
    return ["--ranks", "4", "--steps", "60", "--seed", "1"]


def test_the_page_holds_the_json_reports_figures(tmp_path, capsys):
    trace = str(shared("kineto", "hta-trace_filter"))
    page = _report([trace], tmp_path, capsys)
    assert _figures_in(page) == _json_report([trace], capsys)
    # and the figures a person reads are on the page, in the text report's units
    figs = _figures_in(page)
    assert f"{100 * figs['ledger']['goodput']:.1f} %" in page
    for row in figs["top_kernels"]:
        assert html.escape(row["name"]) in page
    for r in figs["steps"]["per_rank"]:
        assert f"<td class=\"num\">{r['rank']}</td>" in page


def test_the_page_loads_nothing_and_runs_no_script(tmp_path, capsys):
    page = _report(_small_builtin(), tmp_path, capsys)
    # the only <script> is the inert JSON block; no resource is fetched
    assert re.findall(r"<script\b[^>]*>", page) == ['<script type="application/json" id="pau-figures">']
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page, re.I)
    assert "@import" not in page and not re.search(r"url\((?!#)", page)  # only references inside the page
    # a lifecycle run draws every plot of one run
    kinds = re.findall(r'data-plot="([a-z_]+)"', page)
    assert kinds == ["activity", "waterfall", "timeline", "top_kernels"]


def test_trace_supplied_names_are_text(tmp_path, capsys):
    evil = '<script>alert(1)</script> & "$x^2$"'
    events = pa.table({"rank": pa.array([0, 0, 1], pa.int32()), "start_ns": [0, 100, 0], "end_ns": [50, 400, 300],
                       "kind": ["compute", "memcpy", "compute"], "name": [evil, "copy", evil]})
    run = pau.Run(events=events, metadata={"format": "synthetic", "sources": ["<b>file</b>"]})
    figs = dict(run.summary())
    page = html_report.render(run, figs, run.ledger(), title="t <i>x</i>")
    assert "<script>alert(1)</script>" not in page.replace(
        '<script type="application/json" id="pau-figures">', "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # in the table and in the SVG text
    assert "<b>file</b>" not in page and "t &lt;i&gt;x&lt;/i&gt;" in page
    # mathtext is off: the dollar signs are drawn as they are
    svg = plots.svg(plots.top_kernel_bars(figs["top_kernels"]))
    assert "$x^2$" in html.unescape(svg)


def test_plots_draw_the_summarys_numbers():
    job = synth.training_job(ranks=3, steps=40, seed=2, mtbf_s=60.0, checkpoint_every=10)
    run = pau.Run(events=job.events, lifecycle=job.lifecycle)
    led = run.ledger()
    s = run.summary()
    fig = plots.activity_bars(s)
    ax = fig.axes[0]
    # one bar per (activity, rank); each rank's bars add up to 100 %
    widths: dict[float, float] = {}
    for p in ax.patches:
        y = round(p.get_y() + p.get_height() / 2, 6)
        widths[y] = widths.get(y, 0.0) + p.get_width()
    assert len(widths) == 3 and all(abs(w - 100.0) < 1e-9 for w in widths.values())
    # the waterfall falls from accountable to productive by the state totals
    wf = plots.goodput_waterfall(s["ledger"]).axes[0]
    heights = [p.get_height() for p in wf.patches]
    _, size = pau.engine._format.unit(s["ledger"]["accountable_ns"])
    assert heights[0] * size == pytest.approx(s["ledger"]["accountable_ns"], rel=1e-12)
    assert heights[-1] * size == pytest.approx(s["ledger"]["state_ns"]["productive"], rel=1e-12)
    assert sum(heights[1:-1]) * size == pytest.approx(s["ledger"]["accountable_ns"]
                                                      - s["ledger"]["state_ns"]["productive"], rel=1e-9)
    # the timeline's bars cover each rank's accountable time exactly once
    tl = plots.state_timeline(led, run.lifecycle).axes[0]
    per_row: dict[float, float] = {}
    for p in tl.patches:
        per_row[round(p.get_y() + p.get_height() / 2, 6)] = per_row.get(round(p.get_y() + p.get_height() / 2, 6),
                                                                         0.0) + p.get_width()
    _, tsize = pau.engine._format.unit(int(np.asarray(led.intervals["end_ns"]).max()
                                    - np.asarray(led.intervals["start_ns"]).min()))
    acc = {r: a for r, a in zip(led.accountable["rank"].to_pylist(), led.accountable["accountable_ns"].to_pylist())}
    assert sorted(per_row) == [1.0, 2.0, 3.0]
    for i, r in enumerate(sorted(acc), start=1):
        assert per_row[float(i)] * tsize == pytest.approx(acc[r], rel=1e-9)


def test_step_plot_marks_stragglers_red(tmp_path):
    lc = pau.read(shared("kineto", "hta-trace_filter")).lifecycle
    box = plots.step_distribution(lc, stragglers=[1]).axes[0]
    colours = [matplotlib.colors.to_hex(p.get_facecolor()) for p in box.patches]
    assert colours == ["#9ecae9", "#d62728"]


def test_html_refuses_several_runs_and_checks_the_output_first(tmp_path, capsys):
    folder = shared("mlperf", "training_v4.0")
    assert cli.main(["report", str(folder), "--format", "html"]) == 2
    assert "shows one run" in capsys.readouterr().err
    assert cli.main(["report", "--format", "html", "-o", str(tmp_path / "no" / "such" / "x.html")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_run_and_ledger_show_in_notebooks():
    run = pau.read(shared("kineto", "hta-trace_filter"))
    page = run._repr_html_()
    assert "<table>" in page and "events" in page and "kineto" in page
    led_page = run.ledger()._repr_html_()
    s = run.ledger().summary()
    assert f"{100 * s['goodput']:.1f} %" in led_page
    assert "productive" in led_page


# ---------------------------------------------------------------------------
# in a real browser

_CHECK = """<script>
addEventListener("load", () => {
  const grey = (c) => { const m = c.match(/\\d+(\\.\\d+)?/g); if (!m || m.length < 3) return true;
    const [r, g, b] = m.map(Number); return (m.length > 3 && Number(m[3]) === 0) ||
    (Math.max(r, g, b) - Math.min(r, g, b) < 16); };
  const plots = [...document.querySelectorAll("figure.plot")].map((f) => {
    const svg = f.querySelector("svg"); const box = svg.getBoundingClientRect();
    let coloured = 0;
    for (const el of svg.querySelectorAll("path, rect, use, polygon, image")) {
      const r = el.getBoundingClientRect(); if (r.width * r.height <= 0) continue;
      const s = getComputedStyle(el);
      if (el.tagName === "image" || !grey(s.fill) || !grey(s.stroke)) coloured++;
    }
    return {plot: f.dataset.plot, width: box.width, height: box.height, coloured};
  });
  const pre = document.createElement("pre"); pre.id = "pau-check";
  pre.textContent = JSON.stringify({plots, resources: performance.getEntriesByType("resource").length});
  document.body.appendChild(pre);
});
</script>"""


def _browser(page: str, tmp_path: pathlib.Path, name: str) -> tuple[dict, list[str], pathlib.Path]:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("headless Chromium not installed (apt-get install chromium)")
    probe = tmp_path / f"{name}.check.html"
    probe.write_text(page.replace("</body>", _CHECK + "</body>"))
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={tmp_path / 'chromium'}"]
    dom = subprocess.run(flags + ["--enable-logging=stderr", "--v=0", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="pau-check">(.*?)</pre>', dom.stdout, re.S)
    assert m, f"chromium rendered nothing: {dom.stderr[-2000:]}"
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    shots = pathlib.Path(os.environ.get("PAU_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    png = shots / f"{name}.png"
    (tmp_path / f"{name}.html").write_text(page)
    subprocess.run(flags + ["--window-size=1200,2400", f"--screenshot={png}", (tmp_path / f"{name}.html").as_uri()],
                   capture_output=True, text=True, timeout=120, check=True)
    return json.loads(html.unescape(m.group(1))), console, png


def test_compare_page_holds_compare_json(tmp_path, capsys):
    a = str(shared("kineto", "pytorch-kineto", "resnet50_num_workers_0"))
    b = str(shared("kineto", "pytorch-kineto", "resnet50_num_workers_4"))
    out = tmp_path / "cmp.html"
    assert cli.main(["compare", a, b, "--format", "html", "-o", str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["compare", a, b, "--format", "json"]) == 0
    assert _figures_in(out.read_text()) == json.loads(capsys.readouterr().out)
    page = out.read_text()
    assert re.findall(r'data-plot="([a-z_]+)"', page) == ["causes", "kernels"]
    # the kernel that appeared is named, with its exact total
    k = next(r for r in _figures_in(page)["kernels"]["kernels"] if r["status"] == "appeared")
    assert html.escape(k["name"][:100]) in page and pau.engine._format.duration(k["total_ns_b"]) in page


def test_the_browser_check_can_fail(tmp_path):
    # a page with an error and a plot with nothing drawn: the check sees both
    bad = ("<!DOCTYPE html><html><body><script>undefined_function()</script>"
           '<figure class="plot" data-plot="empty"><svg width="300" height="200">'
           '<rect width="300" height="200" fill="#ffffff"/></svg></figure></body></html>')
    result, console, _ = _browser(bad, tmp_path, "bad")
    assert any("undefined_function" in line for line in console)
    assert result["plots"] == [{"plot": "empty", "width": 300, "height": 200, "coloured": 0}]


@pytest.mark.parametrize("name, args", [
    ("kineto", ["kineto/hta-trace_filter"]),
    ("builtin", None),
    ("serving", ["serving/aiperf_gpt-oss-20b_run1"]),
    ("compare", ["kineto/pytorch-kineto/resnet50_num_workers_0", "kineto/pytorch-kineto/resnet50_num_workers_4"]),
])
def test_the_report_renders_in_a_browser(name, args, tmp_path, capsys):
    if name == "compare":
        out = tmp_path / "cmp.html"
        assert cli.main(["compare"] + [str(shared(*p.split("/"))) for p in args]
                        + ["--format", "html", "-o", str(out)]) == 0
        page = out.read_text()
    else:
        argv = ["report"] + ([str(shared(*args[0].split("/")))] if args else _small_builtin())
        page = _report(argv, tmp_path, capsys)
    result, console, png = _browser(page, tmp_path, name)
    assert console == [], "the page logs to the console"
    assert result["resources"] == 0, "the page loaded a resource"
    expected = {"kineto": ["activity", "idle", "waterfall", "timeline", "steps", "top_kernels"],
                "builtin": ["activity", "waterfall", "timeline", "top_kernels"], "serving": ["latency"],
                "compare": ["causes", "kernels"]}[name]
    assert [p["plot"] for p in result["plots"]] == expected
    for p in result["plots"]:
        assert p["width"] > 200 and p["height"] > 60, p
        assert p["coloured"] > 0, f"plot {p['plot']} has no drawn content"
    # the screenshot is a page, not a blank
    img = matplotlib.image.imread(png)
    assert img.shape[0] > 1000 and img.shape[1] == 1200
    rgb = img[..., :3]
    assert (rgb.max(axis=2) - rgb.min(axis=2) > 0.2).mean() > (0.002 if expected else 0.0)
