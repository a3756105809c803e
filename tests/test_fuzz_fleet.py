"""Mutation tests of the fleet readers (sacct text and JSON, pods, the Alibaba pod list,
Philly, Megatron-LM logs, NVRx cycle files), in the manner of ``tests/test_fuzz_readers.py``.

Each case mutates a sample (truncation, bit and byte flips, a slice cut or doubled, a JSON
value swapped for another type or an extreme number) with a seed of its own and reads it.
The rule (:func:`fuzz.run_case`): a :class:`pau.errors.PauError` that names the file, or a
result whose tables hold: no job lost (rows read plus rows set aside equal the records
counted), every allocation an int64 that is null only where the job has no end or no
accelerators, and a lifecycle ``pau.core.attribute`` accepts or refuses with a PauError.
``PAU_FUZZ_CASES=N`` runs N cases per reader (default a quarter of :data:`fuzz.DEFAULT_CASES`).
"""

from __future__ import annotations

import os
import random

import pytest

import fuzz
import pau.core as core
from pau.readers.kubernetes import read_alibaba_pods, read_pods
from pau.readers.megatron import read_megatron
from pau.readers.nvrx import read_nvrx
from pau.readers.scheduler import Records, read_philly
from pau.readers.slurm import read_sacct_jobs
from shared_data import shared

SEED = 40
HERE = os.path.dirname(os.path.abspath(__file__))
FLEET = os.path.join(HERE, "data", "fleet")


def _jobs_hold(name: str, jobs) -> None:
    meta = jobs.schema.metadata
    assert int(meta[b"pau.rows"]) >= jobs.num_rows, name
    for r in jobs.to_pylist():
        a = r["allocated_accelerator_ns"]
        if a is None:
            assert r["accelerators"] is None or (r["start_ns"] is not None and r["end_ns"] is None), name
        else:
            assert 0 <= a <= 2**63 - 1, name


def _life_holds(name: str, life) -> None:
    if life is not None and life.num_rows:
        t = life.drop(["job"]) if "job" in life.column_names else life
        fuzz.run_case(name, lambda: core.attribute(t))


READERS = [
    ("sacct-text", ("fleet", "slurm_sacct", "psc_bridges_sacct_parsable.txt"), lambda p: read_sacct_jobs(p, tz="UTC", on_invalid="quarantine")),
    ("sacct-json", None, lambda p: read_sacct_jobs(p, on_invalid="quarantine")),
    ("pods", None, lambda p: read_pods(p, on_invalid="quarantine")),
    ("philly", ("cluster", "philly", "jobs_subset_marwage.json"), lambda p: read_philly(p, tz="UTC", on_invalid="quarantine")),
    ("megatron", None, lambda p: read_megatron(p, tz="UTC", on_invalid="quarantine")),
    ("nvrx", None, lambda p: read_nvrx([p], ranks_per_node=2, on_invalid="quarantine")),
]
LOCAL = {"sacct-json": ("slurm_json", "sacct_json_sample.json"), "pods": ("k8s_pods", "pods_sample.json"),
         "megatron": ("megatron_log", "gpt3_ckpt_resume_sample.log"), "nvrx": ("nvrx_cycle_info", "cycle_info.4711.0.1")}


@pytest.mark.parametrize("which", [r[0] for r in READERS])
def test_fleet_readers_survive_mutation(which, tmp_path):
    _, parts, read = next(r for r in READERS if r[0] == which)
    src = shared(*parts) if parts else os.path.join(FLEET, *LOCAL[which])
    with open(src, "rb") as f:
        data = f.read()
    if which == "philly":
        data = data[: data.index(b"\n    }", 20000) + 6] + b"\n]\n"   # a few dozen jobs: the cases stay quick
    n = fuzz.cases(fuzz.DEFAULT_CASES // 4)
    for case in range(n):
        rng = random.Random(f"{SEED}-{which}-{case}")
        mutate = rng.choice(fuzz.TEXT_MUTATIONS)
        name = f"{which} case {case} ({mutate.__name__})"
        p = tmp_path / os.path.basename(src)
        p.write_bytes(mutate(rng, data))
        got = fuzz.run_case(name, lambda: read(str(p)), names=os.path.basename(src))
        if got is None:
            continue
        assert isinstance(got, Records), name
        rec = got
        if rec.jobs is not None:
            _jobs_hold(name, rec.jobs)
            meta = rec.jobs.schema.metadata
            assert int(meta[b"pau.quarantined_rows"]) == got.quarantine.num_rows, name
        _life_holds(name, rec.lifecycle)


def test_alibaba_pods_survive_mutation(tmp_path):
    src = shared("cluster", "alibaba", "gpu-v2023", "openb_pod_list_default.csv")
    with open(src, "rb") as f:
        data = b"".join(f.readlines()[:300])
    for case in range(fuzz.cases(fuzz.DEFAULT_CASES // 4)):
        rng = random.Random(f"{SEED}-alibaba-{case}")
        mutate = rng.choice(fuzz.BYTE_MUTATIONS)
        name = f"alibaba case {case} ({mutate.__name__})"
        p = tmp_path / "openb_pod_list_default.csv"
        p.write_bytes(mutate(rng, data))
        got = fuzz.run_case(name, lambda: read_alibaba_pods(p, origin_ns=0, on_invalid="quarantine"),
                            names="openb_pod_list_default.csv")
        if got is not None:
            _jobs_hold(name, got.jobs)
