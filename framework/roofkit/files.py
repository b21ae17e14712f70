"""Reading spec files safely: regular files only, bounded in size and nesting, never blocking.

A spec path may name anything: a FIFO (whose ``open`` blocks until a writer comes), a link
to ``/dev/zero`` (endless bytes), a symlink loop, a file of gigabytes or an array nested
thousands deep. Each becomes a located :class:`SpecError` here, before a parser sees it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .errors import Problem, SpecError

#: the largest spec file read (the biggest shipped spec is a few KiB)
MAX_BYTES = 4 * 1024 * 1024
#: the deepest nesting of tables and arrays a spec may have (the shipped ones use 4)
MAX_DEPTH = 32


def real_path(path: str | Path) -> Path:
    """The absolute path with every symlink followed, as far as the links lead: a symlink
    loop is left unresolved (reading it then names the loop) instead of raising."""
    return Path(os.path.realpath(os.path.abspath(path)))


def _what(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _oserror(path: Path, exc: OSError) -> SpecError:
    if exc.errno == errno.ENOENT:
        text = "no such spec file"
    elif exc.errno == errno.ELOOP:
        text = "a symlink loop (the links never reach a file)"
    elif exc.errno == errno.EISDIR:
        text = "a folder, not a spec file"
    else:
        text = f"cannot read: {exc.strerror or exc}"
    return SpecError(Problem(str(path), None, text))


def kind_of_path(path: str | Path) -> str:
    """``"file"``, ``"dir"``, ``"missing"``, ``"loop"`` or a phrase naming what else it is
    (a FIFO, a device...), following symlinks, without opening anything."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return "loop" if exc.errno == errno.ELOOP else "missing"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    return _what(mode)


def read_spec_bytes(path: str | Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; SpecError naming the file
    otherwise. The file is opened non-blocking and checked again once open, so a path
    swapped for a FIFO between the two looks cannot hang the read."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _oserror(path, exc) from None
    if not stat.S_ISREG(st.st_mode):
        what = _what(st.st_mode)
        if stat.S_ISDIR(st.st_mode):
            raise SpecError(Problem(str(path), None, "a folder, not a spec file"))
        raise SpecError(Problem(str(path), None, (
            f"{what}, not a regular file; spec files are read only from regular files")))
    if st.st_size > limit:
        raise SpecError(Problem(str(path), None, (
            f"{st.st_size} bytes, over the {limit} byte limit for a spec file")))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _oserror(path, exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SpecError(Problem(str(path), None, (
                f"{_what(st.st_mode)}, not a regular file; spec files are read only from "
                "regular files")))
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise SpecError(Problem(str(path), None, (
                    f"over the {limit} byte limit for a spec file")))
    except OSError as exc:
        raise _oserror(path, exc) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def nesting_problem(data, limit: int = MAX_DEPTH) -> str | None:
    """A message when tables and arrays in ``data`` nest deeper than ``limit`` (walked
    without recursion, so no depth can overflow the stack), else None."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return (f"tables and arrays nest more than {limit} levels deep; "
                    "a spec needs a few")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, dict | list))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, dict | list))
    return None


def toml_files_under(folder: Path, recursive: bool) -> list[Path]:
    """The ``*.toml`` entries of ``folder`` (and its subfolders when ``recursive``), sorted;
    folder symlinks are followed once each, so a link loop ends instead of recursing."""
    out: list[Path] = []
    if not recursive:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return out
        return [folder / n for n in names if n.endswith(".toml")
                and not os.path.isdir(folder / n)]
    seen: set[tuple[int, int]] = set()
    for root, dirs, files in os.walk(folder, followlinks=True):
        try:
            st = os.stat(root)
        except OSError:
            dirs[:] = []
            continue
        ident = (st.st_dev, st.st_ino)
        if ident in seen:
            dirs[:] = []
            continue
        seen.add(ident)
        dirs.sort()
        out += [Path(root) / n for n in files if n.endswith(".toml")]
    return sorted(out)
