"""The shape of the project that the design card promises."""

from __future__ import annotations

import pathlib
import re

import pytest

import pau
import pau.core

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_core_headers_know_nothing_of_python():
    core = ROOT / "csrc" / "core"
    if not core.is_dir():
        pytest.skip("sources not beside the tests (installed elsewhere)")
    for header in core.glob("*"):
        text = header.read_text()
        assert not re.search(r"#\s*include\s*[<\"](pybind11|Python)", text), header.name


def test_compiled_module_is_private_and_public_api_is_curated():
    assert "_core" not in pau.__all__
    for name in ("classify", "overlap", "ledger", "classify_dataset", "Ledger", "errors"):
        assert name in pau.__all__
    for name in pau.core.__all__:
        assert hasattr(pau.core, name)


def test_package_ships_typing_markers():
    pkg = pathlib.Path(pau.__file__).parent
    assert (pkg / "py.typed").exists()
    assert (pkg / "_core.pyi").exists()


def test_errors_are_value_errors():
    from pau import errors

    for name in errors.__all__:
        if name == "Interrupted":
            # Ctrl-C is not bad input: `except ValueError` must not swallow it.
            assert issubclass(errors.Interrupted, KeyboardInterrupt)
            assert not issubclass(errors.Interrupted, ValueError)
        else:
            assert issubclass(getattr(errors, name), ValueError)
