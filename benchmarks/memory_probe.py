"""Peak memory of ``pau.core.classify_dataset`` on one Parquet file, in a fresh process.

Usage::

    python benchmarks/memory_probe.py FILE [--batch-rows N]

Prints one JSON object: ``path``, ``rows`` (as counted by classify_dataset),
``baseline_rss_bytes`` (peak RSS after the imports, before reading),
``peak_rss_bytes`` (peak RSS of the process), ``ru_maxrss_bytes`` and ``seconds``.
Run it in a subprocess per file: peak RSS is a high-water mark of the process, so two
files probed in one process would mask each other.

Which peak: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` is reported, but on Linux
it is not a clean measure for a child process: the kernel carries the parent's
high-water mark over fork and exec (``exec_mmap`` saves the old address space's
hiwater RSS in the process's ``maxrss``), so a probe started from a pytest process
holding 1 GB of fixtures reports at least 1 GB whatever it does. ``VmHWM`` in
``/proc/self/status`` is the high-water mark of the probe's own address space, and
is what ``peak_rss_bytes`` holds where it exists (elsewhere: ``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time


def _maxrss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return int(rss) if sys.platform == "darwin" else int(rss) * 1024


def _peak_rss_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # "VmHWM:   123456 kB"
    except OSError:
        pass
    return _maxrss_bytes()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--batch-rows", type=int, default=None)
    args = parser.parse_args(argv)

    import pau.core  # imports (numpy, pyarrow, the native core) count in the baseline

    baseline = _peak_rss_bytes()
    t0 = time.perf_counter()
    out = pau.core.classify_dataset(args.path, batch_rows=args.batch_rows, progress=False)
    seconds = time.perf_counter() - t0
    rows = int(out.schema.metadata[b"pau.rows"])
    print(json.dumps({
        "path": args.path,
        "rows": rows,
        "baseline_rss_bytes": baseline,
        "peak_rss_bytes": _peak_rss_bytes(),
        "ru_maxrss_bytes": _maxrss_bytes(),
        "seconds": round(seconds, 3),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
