"""Every dotted ``pau.x.y`` name in the docs and the README exists: the module imports
and has the attribute. So the docs never send a user to a name that moved or was never
there (the figures' modules moved in one release; this catches the next move).
"""

from __future__ import annotations

import importlib
import pathlib
import re
from types import ModuleType
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]

#: ``pau.`` names that are not Python names: keys of Parquet and Arrow schema metadata,
#: written in the docs as such (docs/archive.md, docs/bad-input.md, README.md).
METADATA_KEYS = {
    "pau.rows", "pau.quarantined_rows",  # result tables (README "Choices written down", docs/archive.md)
    "pau.partitions", "pau.partitions_computed", "pau.partitions_reused", "pau.max_in_flight",  # archive results
    "pau.layout_version",  # file metadata of pau's archive layout (docs/archive.md)
    "pau.rank_not_null",  # file metadata: the rank column's nullability (docs/archive.md)
    "pau.jobs.rounded_rows", "pau.jobs.source", "pau.jobs.tz",  # the jobs table's metadata (docs/fleet.md)
    "pau.jobs.warnings",  # a jobs file's reader warnings in the fleet archive (docs/fleet.md)
}

#: ``pau`` followed by dotted identifiers, not inside a longer word or path.
NAME = re.compile(r"(?<![\w./-])pau(?:\.[A-Za-z_]\w*)+")


def _mentions() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for page in PAGES:
        for i, line in enumerate(page.read_text().splitlines(), 1):
            for m in NAME.finditer(line):
                found.setdefault(m.group(0), []).append(f"{page.relative_to(ROOT)}:{i}")
    return found


MENTIONS = _mentions()


def _resolve(name: str) -> Any:
    """The object a dotted name names: attributes of ``pau``, importing each submodule
    the attribute is not (yet) loaded as."""
    parts = name.split(".")
    obj: Any = importlib.import_module(parts[0])
    for part in parts[1:]:
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        if not isinstance(obj, ModuleType):
            raise AttributeError(f"{type(obj).__name__} {obj!r} has no attribute {part!r}")
        sub = f"{obj.__name__}.{part}"
        try:
            obj = importlib.import_module(sub)
        except ModuleNotFoundError as exc:
            if exc.name != sub:
                raise  # a dependency is missing, not the name
            raise AttributeError(f"module {obj.__name__!r} has no attribute or submodule {part!r}") from None
    return obj


def test_the_docs_mention_names():
    """The scan is not vacuous: the docs name the facade, the figures and a reader."""
    for name in ("pau.core.compare", "pau.figures.stragglers.stragglers", "pau.core.release_kept_memory",
                 "pau.readers.alibaba.read_alibaba_minibatch", "pau.rows"):
        assert name in MENTIONS, name


def test_metadata_keys_are_not_python_names():
    """Each listed exception is in the docs and is not a name of pau (else it needs no exception)."""
    for key in sorted(METADATA_KEYS):
        assert key in MENTIONS, f"{key} is no longer in the docs: drop it from METADATA_KEYS"
        with pytest.raises(AttributeError):
            _resolve(key)


@pytest.mark.parametrize("name", sorted(set(MENTIONS) - METADATA_KEYS))
def test_every_dotted_name_resolves(name):
    try:
        _resolve(name)
    except AttributeError as exc:
        pytest.fail(f"{name} (in {', '.join(MENTIONS[name][:5])}) does not exist: {exc}")


def test_the_check_sees_a_missing_name():
    with pytest.raises(AttributeError):
        _resolve("pau.figures.analysis.stragglers")
    with pytest.raises(AttributeError):
        _resolve("pau.core.no_such_name")
    assert _resolve("pau.figures.stragglers.stragglers").__name__ == "stragglers"


def test_no_link_outside_the_repository():
    """The docs link only within the repository (issue 39): a page of another project is
    named in words (its repository, its file), never as a URL that rots or leaves the tree."""
    found = [f"{page.relative_to(ROOT)}:{i}: {m.group(0)}"
             for page in PAGES + [ROOT / "CHANGELOG.md"]
             for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
             for m in re.finditer(r"\b(?:https?|ftp)://\S+", line)]
    assert not found, "\n".join(found)
