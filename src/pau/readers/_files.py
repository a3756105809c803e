"""Which files a reader reads: one file, the matching files of a directory, or a list
of either."""

from __future__ import annotations

import os
from typing import Any, Callable

from pau.errors import NoInputError


def files_in(path: str | os.PathLike, suffixes: tuple[str, ...], *, missing: str, empty: str) -> list[str]:
    """``path`` itself, or the files of a directory and its subfolders (hidden files and
    folders left out) whose names end with one of ``suffixes``, in order of their path
    below ``path``. ``missing`` and
    ``empty`` are the messages (``{p}`` stands for the path) of the
    :class:`~pau.errors.NoInputError` when nothing is at ``path`` or a directory holds
    no such file."""
    p = os.fspath(path)
    if os.path.isfile(p):
        return [p]
    if not os.path.isdir(p):
        raise NoInputError(missing.replace("{p}", repr(p)))
    names = []
    for folder, dirs, files in os.walk(p):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel = os.path.relpath(folder, p)
        names += [n if rel == "." else os.path.join(rel, n) for n in files
                  if not n.startswith(".") and n.endswith(suffixes)]
    if not names:
        raise NoInputError(empty.replace("{p}", repr(p)))
    return [os.path.join(p, n) for n in sorted(names, key=lambda n: n.split(os.sep))]


def expand(path: Any, lister: Callable[[Any], list[str]], reader: str) -> list[str]:
    """The files of a path, or of each path of a list (an empty list is an error)."""
    if isinstance(path, (str, os.PathLike)):
        return lister(path)
    paths = [p for item in path for p in lister(item)]
    if not paths:
        raise NoInputError(f"{reader}: no paths given. Fix: give a file or a folder")
    return paths
