"""Write the seed inputs of the fuzz targets (csrc/fuzz/*.cpp) into tests/fuzz_corpus/.

Run once from the repository root (``python csrc/fuzz/seeds.py``); the result is
committed. Seeds are the inputs of each target taken from real files: Parquet files
written by pyarrow with the options the page decoder meets (encodings, codecs, page
versions, checksums, optional columns, dictionary sizes), the small Kineto samples of
``tests/data``, and snappy streams of pyarrow's compressor. Every file is named
``seed-*``; an input that once found a bug is named ``crash-*`` and is never removed.
Deterministic: the same files on every run (old ``seed-*`` files are replaced).
"""

from __future__ import annotations

import gzip
import io
import pathlib
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz_corpus"
sys.path.insert(0, str(ROOT / "tests"))
import parquet_reference as ref  # noqa: E402

CODEC = {"UNCOMPRESSED": 0, "SNAPPY": 8}


def _put(target: str, name: str, data: bytes) -> None:
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{name}").write_bytes(data)


def _tables(rng: np.random.Generator) -> list[tuple[str, pa.Table, dict]]:
    n = 300
    ramp = np.cumsum(rng.integers(0, 5000, n)).astype(np.int64) + 1_700_000_000_000_000_000
    small = rng.integers(-3, 4, n).astype(np.int32)
    wide = rng.integers(-(2**62), 2**62, n, dtype=np.int64)
    kinds = pa.array(rng.choice(["compute", "comm", "memcpy", "idle"], n)).dictionary_encode()
    many = pa.array([f"k{v}" for v in rng.integers(0, 200, n)]).dictionary_encode()
    t = pa.table({"ramp": ramp, "small": small, "wide": wide, "kind": kinds, "many": many})
    req = pa.schema([pa.field(f.name, f.type, nullable=False) for f in t.schema])
    out = []
    for version in ("1.0", "2.0"):
        for codec in ("NONE", "SNAPPY"):
            out.append((f"plain-v{version}-{codec}", t.cast(req),
                        dict(use_dictionary=["kind", "many"], compression=codec, data_page_version=version,
                             write_page_checksum=True, data_page_size=768)))
            out.append((f"delta-v{version}-{codec}", t.cast(req),
                        dict(use_dictionary=["kind", "many"], compression=codec, data_page_version=version,
                             column_encoding={"ramp": "DELTA_BINARY_PACKED", "small": "DELTA_BINARY_PACKED",
                                              "wide": "DELTA_BINARY_PACKED"}, data_page_size=512)))
            out.append((f"dict-v{version}-{codec}", t,  # optional columns, every value defined
                        dict(use_dictionary=True, compression=codec, data_page_version=version,
                             write_page_checksum=version == "1.0", data_page_size=1024)))
    return out


def parquet(rng: np.random.Generator) -> None:
    for name, table, options in _tables(rng):
        sink = io.BytesIO()
        pq.write_table(table, sink, **options)
        data = sink.getvalue()
        md = pq.ParquetFile(pa.BufferReader(data)).metadata.row_group(0)
        _put("parquet_file", f"{name}.bin", data)
        for leaf in range(md.num_columns):
            c = md.column(leaf)
            start = c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
            chunk = data[start:start + c.total_compressed_size]
            field = table.schema.field(leaf)
            if pa.types.is_dictionary(field.type):
                how = 4  # int32 indices, as pyarrow reads a dictionary<string>
            else:
                how = 1 if field.type == pa.int64() else 0
            how |= CODEC[c.compression] | (16 if field.nullable else 0) | 32
            _put("parquet_chunk", f"{name}-{field.name}", bytes([how]) + md.num_rows.to_bytes(3, "little") + chunk)
            dict_size = 0
            for k, (header, page) in enumerate(ref.pages(chunk, codec=c.compression)):
                if header[1] == ref.DICTIONARY_PAGE:
                    dict_size = header[7][1]
                if header[1] not in (ref.DATA_PAGE, ref.DATA_PAGE_V2) or k > 2:
                    continue
                count, encoding, values = ref._values_of(header, page, optional=field.nullable)
                if encoding == 5:   # DELTA_BINARY_PACKED
                    _put("parquet_delta", f"{name}-{field.name}-{k}",
                         bytes([int(field.type == pa.int64())]) + count.to_bytes(2, "little") + values)
                elif encoding in (2, 8) and values:   # indices: the width, then the hybrid
                    _put("parquet_rle", f"{name}-{field.name}-{k}",
                         bytes([values[0]]) + count.to_bytes(2, "little") + dict_size.to_bytes(2, "little")
                         + values[1:])
                if header[1] == ref.DATA_PAGE and field.nullable and k == 1:   # the definition levels
                    size = int.from_bytes(page[:4], "little")
                    _put("parquet_rle", f"{name}-{field.name}-levels",
                         bytes([1]) + count.to_bytes(2, "little") + (2).to_bytes(2, "little") + page[4:4 + size])


def events(rng: np.random.Generator) -> None:
    """Events files (rank, start_ns, end_ns, kind) as pyarrow writes them by default and
    uncompressed with page checksums: the whole-file inputs pau.read sweeps."""
    n = 300
    start = np.sort(rng.integers(0, 10**12, n)).astype(np.int64)
    t = pa.table({"rank": pa.array(rng.integers(0, 2, n).astype(np.int32)), "start_ns": start,
                  "end_ns": start + rng.integers(0, 10**6, n),
                  "kind": pa.array(rng.choice(["compute", "communication", "memcpy", "sync"], n)).dictionary_encode()})
    for name, options in (("default", {}), ("checksums", dict(compression="none", write_page_checksum=True))):
        sink = io.BytesIO()
        pq.write_table(t, sink, **options)
        _put("parquet_file", f"events-{name}.bin", sink.getvalue())


def snappy(rng: np.random.Generator) -> None:
    codec = pa.Codec("snappy")
    samples = {
        "text": b"the quick brown fox jumps over the lazy dog. " * 40,
        "ramp": np.arange(600, dtype=np.int64).tobytes(),
        "random": rng.integers(0, 256, 700, dtype=np.uint8).tobytes(),
        "runs": b"a" * 300 + b"b" * 5 + b"abcabcabc" * 30,
        "empty": b"",
        "long-literal": rng.integers(0, 256, 70_000 // 8, dtype=np.uint8).tobytes() * 2,
    }
    for name, raw in samples.items():
        _put("snappy", name, codec.compress(raw, asbytes=True))


def kineto() -> None:
    data = ROOT / "tests" / "data" / "kineto"
    for rel in ("hta-trace_file_list/inference_rank_1.json.gz", "hta-triton_example/triton_example.json.gz",
                "hta-critical_path/cuda_event_sync/event_sync_trace.json.gz",
                "hta-amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"):
        text = gzip.decompress((data / rel).read_bytes())[:12_000]
        _put("kineto", rel.split("/")[0], bytes([63]) + text)
    handmade = (
        b'{"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 2, "backend": "nccl"},\n'
        b' "baseTimeNanoseconds": 1700000000000000000, "deviceProperties": [{"id": 0, "name": "A100"}],\n'
        b' "traceEvents": [\n'
        b'  {"ph": "X", "cat": "kernel", "name": "gemm\\u00e9", "pid": 0, "tid": 7, "ts": 1712195495522456.125,'
        b' "dur": 3.5, "args": {"device": 0, "stream": 7, "correlation": 12}},\n'
        b'  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1e3,'
        b' "dur": 1, "args": {"correlation": 12}},\n'
        b'  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0,'
        b' "dur": 100},\n'
        b'  {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0", "labels": "x"}},\n'
        b'  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "ts": -5, "dur": 9223372036854775807,'
        b' "args": {"device": 0, "bytes": 100}}\n'
        b' ], "displayTimeUnit": "ns"}\n')
    _put("kineto", "handmade", bytes([5]) + handmade)
    _put("kineto", "array", bytes([0]) + b'[{"ph": "X", "cat": "kernel", "ts": 1, "dur": 2, "pid": 3}]')


def main() -> None:
    for old in CORPUS.glob("*/seed-*"):
        old.unlink()
    rng = np.random.default_rng(38)
    parquet(rng)
    events(rng)
    snappy(rng)
    kineto()
    for d in sorted(CORPUS.iterdir()):
        files = list(d.iterdir())
        print(f"{d.name}: {len(files)} files, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    main()
