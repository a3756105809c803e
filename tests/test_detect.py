"""pau.readers.detect: format detection by content, on every shared sample folder and on
files built in ``tmp_path``."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pau.readers.detect import UnknownFormatError, detect_format

from shared_data import shared


@pytest.mark.parametrize("rel, fmt", [
    ("nsys/icon_isc25", "nsys"), ("nsys/icon_isc25/gpu.sqlite", "nsys"), ("nsys/icon_isc25/cpu.sqlite", "nsys"),
    ("mlperf/training_v4.0", "mllog"),
    ("mlperf/training_v4.0/tinycorp/results/tinybox_green/resnet/result_0.txt", "mllog"),
    ("kineto/pytorch-kineto", "kineto"), ("kineto/hta-amd_trace", "kineto"),
])
def test_samples(rel, fmt):
    p = shared(*rel.split("/"))
    assert detect_format(p) == fmt


def test_built_files(tmp_path):
    (tmp_path / "k.json.gz").write_bytes(gzip.compress(b'{"schemaVersion": 1, "traceEvents": []}'))
    (tmp_path / "old.json").write_text('[{"ph": "X", "name": "k"}]')
    (tmp_path / "v.json").write_text(json.dumps({"ttfts": [0.1], "itls": [[]]}))
    (tmp_path / "a.jsonl").write_text('{"metadata": {"request_start_ns": 1}, "metrics": {}}\n')
    (tmp_path / "g.json").write_text(json.dumps({"experiments": []}))
    pq.write_table(pa.table({"rank": [0]}), tmp_path / "e.parquet")
    got = {n: detect_format(tmp_path / n) for n in ("k.json.gz", "old.json", "v.json", "a.jsonl", "g.json",
                                                     "e.parquet")}
    assert got == {"k.json.gz": "kineto", "old.json": "kineto", "v.json": "serving", "a.jsonl": "serving",
                   "g.json": "serving", "e.parquet": "parquet"}


def test_unknown(tmp_path):
    bad = {"empty.json": b"", "text.txt": b"hello world\n", "obj.json": b'{"a": 1}',
           "trunc.gz": gzip.compress(b'{"traceEvents": []}')[:10]}
    for name, data in bad.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(UnknownFormatError, match="Fix: give one of"):
            detect_format(tmp_path / name)
    d = tmp_path / "mixed"
    d.mkdir()
    (d / "a.json").write_text('[{"ph": "X"}]')
    (d / "b.json").write_text('{"experiments": []}')
    with pytest.raises(UnknownFormatError, match="mixing formats"):
        detect_format(d)
    with pytest.raises(FileNotFoundError):
        detect_format(tmp_path / "nothing")
