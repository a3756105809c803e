"""Streaming a Parquet file: ``pau.core.classify_dataset`` against pyarrow just reading it.

Group ``dataset ...``: the same file (written once per module by
``pau.synth.write_training_run``, 1M-row row groups (scaled), zstd) is

* read by pyarrow, the four columns pau needs (``rank, start_ns, end_ns, kind``):
  ``pq.read_table(path, columns=...)`` (the whole table materialized) and a loop
  over ``ParquetFile.read_row_group`` dropping each row group before the next (what
  a streaming consumer does, and the floor for classify_dataset, which makes the
  same calls);
* classified by ``pau.core.classify_dataset(path)``, streamed row group by row group.

So the ratio classify_dataset / pyarrow read is the price of the classification on
top of the I/O and decoding any Parquet consumer pays. After the first read the file
sits in the page cache for every contender alike.

``test_flat_memory`` writes a small and a big file and runs
``benchmarks/memory_probe.py`` on each in a fresh process: the peak RSS must not grow
with the file by more than 100 MB.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pau.core
import pau.engine.io
import pau.synth
from bench_config import SEED, big_events, events_label, scaled

COLUMNS = ["rank", "start_ns", "end_ns", "kind"]
PROBE = Path(__file__).with_name("memory_probe.py")
MB = 1 << 20
#: Rows per row group: pau.synth's default (1M), scaled with the file sizes so that a
#: quick run keeps the shape of the full one (about 10 row groups in the 10M file).
ROW_GROUP = scaled(1_000_000)


class EventsFile:
    def __init__(self, path: Path, rows: int, ranks: int):
        self.path, self.rows, self.ranks = path, rows, ranks
        self.group = f"dataset {events_label(rows)} events x {ranks} ranks (Parquet)"
        self.table = pq.read_table(path, columns=COLUMNS)
        self.classified = pau.core.classify(self.table)


@pytest.fixture(scope="module")
def events_file(tmp_path_factory) -> EventsFile:
    path = tmp_path_factory.mktemp("dataset") / "events.parquet"
    ranks = 8
    rows = pau.synth.write_training_run(path, scaled(10_000_000), ranks=ranks, seed=SEED,
                                        row_group_size=ROW_GROUP)
    yield EventsFile(path, rows, ranks)
    path.unlink()


def _read_table(path):
    return pq.read_table(path, columns=COLUMNS)


def _read_row_groups(path, keep: bool = False):
    """Stream the row groups as a consumer does: each one is dropped before the next
    is read (``keep=True`` returns them, for the untimed equality check)."""
    pf = pq.ParquetFile(path)
    kept, rows = [], 0
    for i in range(pf.num_row_groups):
        t = pf.read_row_group(i, columns=COLUMNS)
        rows += t.num_rows
        if keep:
            kept.append(t)
    return kept if keep else rows


def test_pyarrow_read_table(benchmark, events_file, note_rate):
    benchmark.group = events_file.group
    got = benchmark(_read_table, events_file.path)
    note_rate(benchmark, events_file.rows)
    assert got.num_rows == events_file.rows
    assert got.equals(events_file.table)


def test_pyarrow_row_group_loop(benchmark, events_file, note_rate):
    benchmark.group = events_file.group
    got = benchmark(_read_row_groups, events_file.path)
    note_rate(benchmark, events_file.rows)
    assert got == events_file.rows
    groups = _read_row_groups(events_file.path, keep=True)
    assert len(groups) > 1, "the file should have several row groups"
    assert pa.concat_tables(groups).equals(events_file.table)


def test_classify_dataset(benchmark, events_file, note_rate):
    benchmark.group = events_file.group
    got = benchmark(pau.core.classify_dataset, events_file.path, progress=False)
    note_rate(benchmark, events_file.rows)
    assert got.equals(events_file.classified), (got, events_file.classified)
    assert got.schema.metadata[b"pau.rows"] == str(events_file.rows).encode()


def test_file_classifies_like_the_synthetic_table(events_file):
    """The streamed file holds the run ``training_run_for_events`` makes in memory
    (pau.synth's contract), so classify_dataset(file) == classify(in-memory run)."""
    table = pau.synth.training_run_for_events(scaled(10_000_000), ranks=events_file.ranks,
                                              seed=SEED)
    assert table.num_rows == events_file.rows
    assert pau.core.classify(table).equals(events_file.classified)


# --------------------------------------------------------------------------- memory


def _probe(path: Path) -> dict:
    proc = subprocess.run([sys.executable, str(PROBE), str(path)], capture_output=True,
                          text=True, timeout=3600)
    assert proc.returncode == 0, f"memory probe failed on {path}:\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_flat_memory(tmp_path, report_note):
    """Peak RSS of classify_dataset on a 5M- and a 50M-event file differs by < 100 MB.

    Sizes: ``5M * PAU_BENCH_SCALE`` and ``PAU_BENCH_BIG_EVENTS`` (default
    ``50M * PAU_BENCH_SCALE``). Each file is written by pau.synth in bounded memory
    and probed in a fresh process (``benchmarks/memory_probe.py``).
    """
    big = big_events()
    small = min(scaled(5_000_000), max(1_000, big // 10))
    peaks = {}
    for n in (small, big):
        path = tmp_path / f"events_{n}.parquet"
        rows = pau.synth.write_training_run(path, n, ranks=8, seed=SEED, row_group_size=ROW_GROUP)
        try:
            res = _probe(path)
        finally:
            path.unlink()
        assert res["rows"] == rows
        peaks[rows] = res
    (n_small, small_res), (n_big, big_res) = sorted(peaks.items())
    growth = big_res["peak_rss_bytes"] - small_res["peak_rss_bytes"]
    for n, res in sorted(peaks.items()):
        report_note(f"memory: classify_dataset on {events_label(n)} events: peak RSS "
                    f"{res['peak_rss_bytes'] / MB:.0f} MB (after imports "
                    f"{res['baseline_rss_bytes'] / MB:.0f} MB), {res['seconds']:.2f} s, "
                    f"{n / res['seconds'] / 1e6:.1f} M events/s")
    report_note(f"memory: growth {events_label(n_small)} -> {events_label(n_big)}: "
                f"{growth / MB:+.1f} MB (limit 100 MB)")
    assert growth < 100 * MB, (
        f"peak RSS grew by {growth / MB:.0f} MB from {n_small:,} to {n_big:,} events "
        f"({small_res} vs {big_res}): classify_dataset memory is not bounded by a row group"
    )


def test_flat_memory_pau_layout(tmp_path, report_note):
    """The same on pau's layout (``pau.engine.io.write_dataset``: one file per rank, read by the
    native page decoder, one partition per thread): peak RSS of classify_dataset on 5M
    and 50M events differs by < 100 MB."""
    big = big_events()
    small = min(scaled(5_000_000), max(1_000, big // 10))
    peaks = {}
    for n in (small, big):
        root = tmp_path / f"layout_{n}"
        table = pau.synth.training_run_for_events(n, ranks=8, seed=SEED)
        rows = pau.engine.io.write_dataset(table, root)
        del table
        res = _probe(root)
        shutil.rmtree(root)
        assert res["rows"] == rows
        peaks[rows] = res
    (n_small, small_res), (n_big, big_res) = sorted(peaks.items())
    growth = big_res["peak_rss_bytes"] - small_res["peak_rss_bytes"]
    for n, res in sorted(peaks.items()):
        report_note(f"memory (pau layout): classify_dataset on {events_label(n)} events: peak RSS "
                    f"{res['peak_rss_bytes'] / MB:.0f} MB (after imports {res['baseline_rss_bytes'] / MB:.0f} MB), "
                    f"{res['seconds']:.2f} s, {n / res['seconds'] / 1e6:.1f} M events/s")
    report_note(f"memory (pau layout): growth {events_label(n_small)} -> {events_label(n_big)}: "
                f"{growth / MB:+.1f} MB (limit 100 MB)")
    assert growth < 100 * MB, f"peak RSS grew by {growth / MB:.0f} MB from {n_small:,} to {n_big:,} events"
