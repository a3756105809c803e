"""The lint gate (issue 39): ruff with the rules of `pyproject.toml` ([tool.ruff]): pyflakes'
errors and syntax errors anywhere, and McCabe complexity at most 15 in `src/`.

The functions above the limit when the gate came in are listed in `COMPLEX`: each is debt
to pay by cutting the function into named steps (a kernel whose speed needs its length may
stay, with its reason written here). The list may only shrink: a new function above the
limit fails, and so does a listed one that no longer is (take it off the list)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: (file, function) above the complexity limit today. `attribute_pass` is the Numba
#: rollback kernel: one loop over the steps whose speed needs its array accesses in
#: one body (its helpers take scalars: a helper taking arrays, even inlined, pays a
#: reference count per array and call, about 15x on the pass).
COMPLEX = {
    ("src/pau/engine/_kernels.py", "attribute_pass"),
}


def _ruff(*args: str) -> list[dict]:
    exe = shutil.which("ruff") or os.path.join(os.path.dirname(sys.executable), "ruff")
    if not os.path.exists(exe):
        pytest.skip("ruff is not installed (pip install '.[test]')")
    out = subprocess.run([exe, "check", "--output-format", "json", "--exit-zero", *args], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_pyflakes_and_syntax_errors_nowhere():
    found = [f"{os.path.relpath(x['filename'], ROOT)}:{x['location']['row']}: {x['code']} {x['message']}"
             for x in _ruff("--select", "F,E9", "src", "tests", "benchmarks")]
    assert not found, "\n".join(found)


def test_no_function_in_src_above_the_complexity_limit_but_the_listed_ones():
    found = {(os.path.relpath(x["filename"], ROOT), x["message"].split("`")[1])
             for x in _ruff("--select", "C901", "src") if x["code"] == "C901"}
    new = sorted(found - COMPLEX)
    assert not new, f"above McCabe complexity 15 (cut them into named steps): {new}"
    paid = sorted(COMPLEX - found)
    assert not paid, f"no longer above the limit: take them off COMPLEX in tests/test_lint.py: {paid}"
