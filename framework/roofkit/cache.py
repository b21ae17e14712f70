"""A cache of loaded spec files as plain JSON data, so a warm start skips TOML parsing and pint.

What it trusts, and why:

- **Plain data only.** Entries are written by :mod:`roofkit.plain` (dicts, lists, strings,
  numbers) and rebuilt field by field into the spec classes; nothing in the file can name
  code to run. Never pickle or marshal.
- **Keyed by content.** An entry is keyed by the kind and the SHA-256 of the spec file's
  bytes, under a stamp of roofkit's version, the sources of ``roofkit`` and
  ``roofkit_builtins``, the plugin distributions that loaded and the plugin spec folders: an
  edit that keeps size and mtime (``cp -p``, ``rsync -t``) is another key. The cross-file
  checks (a workload against the circuits and op rules it lowers with) are kept for one
  exact set of files and contents.
- **Checked as a whole.** The file's first line carries the SHA-256 of the rest; a truncated,
  edited or foreign file does not match and is ignored (the cache then rebuilds).
- **Private.** A cache folder that is not the user's own or that group or others can write is
  refused with a :class:`CacheWarning` and roofkit runs uncached; a cache file that others
  can write, or that is not a regular file, is ignored.
- **Tidy.** A failed save removes its temp file; entries of spec files that no longer exist
  (or whose content changed) are pruned on save.

One cache file per installation (its name hashes the path of the ``roofkit`` package).
``ROOFKIT_NO_CACHE=1`` turns it off, ``ROOFKIT_CACHE_DIR`` moves it. The cache is a speed-up
only: deleting it is always safe.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import stat
import tempfile
import warnings
from collections.abc import Iterable
from pathlib import Path

from .errors import Problem, SpecError
from .files import read_spec_bytes

_VERSION = 3
_FORMAT = "roofkit-spec-cache"
#: the largest cache file read
MAX_CACHE_BYTES = 256 * 1024 * 1024
#: how many sets of cross-file check results are kept (one per set of spec paths)
MAX_CHECK_SETS = 8
#: owners and mode bits guard the cache folder only where they mean something
_POSIX = os.name == "posix" and hasattr(os, "getuid")


class CacheWarning(UserWarning):
    """The spec cache cannot be used safely; roofkit runs without it."""


def _package_dir(name: str) -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _sources(root: Path | None) -> list[tuple[str, int]]:
    """(path, mtime in ns) of every source and data file of one package."""
    if root is None:
        return []
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".txt")):
                path = os.path.join(folder, name)
                out.append((path, os.stat(path).st_mtime_ns))
    return out


@functools.cache
def _code_stamp() -> tuple:
    """roofkit's version and the mtimes of roofkit's and roofkit_builtins' files."""
    from . import __version__

    here = Path(__file__).resolve().parent
    return (_VERSION, __version__, *_sources(here), *_sources(_package_dir("roofkit_builtins")))


def stamp(spec_dirs: Iterable = (), plugins: Iterable = ()) -> tuple:
    """The whole stamp: code, the plugin spec folders and the plugin distributions."""
    return (_code_stamp(), tuple(sorted(str(Path(d).resolve()) for d in spec_dirs)),
            tuple(sorted(plugins)))


def _digest(value) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()


def cache_file(install: str | Path | None = None) -> Path | None:
    """The cache file of the roofkit installed at ``install`` (default: this one), named by a
    hash of that path; None when ``ROOFKIT_NO_CACHE`` is set."""
    if os.environ.get("ROOFKIT_NO_CACHE"):
        return None
    base = os.environ.get("ROOFKIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "roofkit")
    install = str(Path(install or Path(__file__).parent).resolve())
    digest = hashlib.sha256(install.encode()).hexdigest()[:16]
    return Path(base) / f"specs-{digest}.json"


def unsafe_folder(folder: Path) -> str | None:
    """Why ``folder`` is no place for a cache others must not change (None: it is safe):
    owned by another user, or writable by its group or by others."""
    try:
        st = os.stat(folder)
    except OSError:
        return None  # not there yet: created private on save
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if not _POSIX:
        return None  # ownership and mode bits mean nothing there; the ACLs decide
    if st.st_uid != os.getuid():
        return f"it is owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = " and ".join(w for w, bit in (("its group", stat.S_IWGRP),
                                            ("others", stat.S_IWOTH)) if st.st_mode & bit)
        return f"{who} can write to it (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _refuse(folder: Path, why: str) -> None:
    warnings.warn(CacheWarning(
        f"not using the spec cache in {folder}: {why}; roofkit runs uncached. Point "
        "ROOFKIT_CACHE_DIR at a folder only you can write (chmod 700), or set "
        "ROOFKIT_NO_CACHE=1"), stacklevel=3)


def _read_private(path: Path) -> bytes | None:
    """The bytes of the cache file when it is a regular file of ours that only we can write
    (None otherwise: missing, foreign, shared, too big)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CACHE_BYTES:
            return None
        if _POSIX and (st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or
                       st.st_uid != os.getuid()):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(MAX_CACHE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def _parse(raw: bytes | None, want_stamp: str) -> dict | None:
    """The payload of a cache file: None unless its header, checksum and stamp all match."""
    if not raw:
        return None
    head, sep, body = raw.partition(b"\n")
    parts = head.split(b" ")
    if not sep or len(parts) != 4 or parts[0] != _FORMAT.encode() or \
            parts[1] != str(_VERSION).encode() or parts[2] != want_stamp.encode():
        return None
    if hashlib.sha256(body).hexdigest().encode() != parts[3]:
        return None  # truncated or edited
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("specs"), dict) or \
            not isinstance(data.get("checks"), dict):
        return None
    return data


class Cached:
    """A cache hit: the spec's key and claimed aliases at once, the spec itself rebuilt from
    its plain data on :meth:`build` (a catalogue builds only the specs it is asked for)."""

    __slots__ = ("claims", "data", "kind", "name", "overrides")

    def __init__(self, kind: str, name: str, claims: tuple[str, ...], data: str,
                 overrides: tuple[str, ...] = ()):
        self.kind, self.name, self.claims, self.data = kind, name, claims, data
        self.overrides = overrides

    def build(self):
        """The spec; :class:`~roofkit.plain.NotPlain` when the data does not fit its class."""
        from .plain import NotPlain, from_plain
        from .spec_kinds import SPEC_KINDS

        try:
            return from_plain(json.loads(self.data), SPEC_KINDS[self.kind].cls)
        except (ValueError, RecursionError, KeyError, TypeError) as exc:
            raise NotPlain(str(exc)) from None


class SpecCache:
    """Loaded specs by (kind, content hash), and cross-file check results by file set.

    :param spec_dirs: the plugin spec folders of this registry.
    :param plugins: ``(distribution, version)`` of every plugin distribution that loaded.
    """

    def __init__(self, spec_dirs: Iterable = (), plugins: Iterable = ()):
        self.path = cache_file()
        self.stamp = _digest(stamp(spec_dirs, plugins))
        self.specs: dict[str, dict] = {}
        self.check_sets: dict[str, list] = {}
        self.hashes: dict[str, list] = {}  # real path -> [dev, ino, size, mtime, ctime, sha]
        self.dirty = False
        self._seen: dict[str, str] = {}  # real path -> content hash, read in this run
        if self.path is None:
            return
        why = unsafe_folder(self.path.parent)
        if why:
            _refuse(self.path.parent, why)
            self.path = None
            return
        data = _parse(_read_private(self.path), self.stamp)
        if data is not None:
            self.specs = data["specs"]
            self.check_sets = data["checks"]
            hashes = data.get("hashes")
            self.hashes = hashes if isinstance(hashes, dict) else {}

    def content_hash(self, file: Path) -> str | None:
        """The SHA-256 of ``file``'s bytes (None: not a readable regular spec file).

        The hash of a file whose device, inode, size, mtime and ctime all match the ones it
        was hashed at is reused: any write changes the ctime, which no tool can set back
        (``cp -p`` and ``rsync -t`` restore the mtime only), so an edit is always read.
        """
        name = str(file)
        hit = self._seen.get(name)
        if hit is not None:
            return hit
        try:
            st = os.stat(file)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        sig = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        known = self.hashes.get(name)
        if isinstance(known, list) and len(known) == 6 and known[:5] == sig and \
                isinstance(known[5], str):
            digest = known[5]
        else:
            try:
                raw = read_spec_bytes(file)
            except SpecError:
                return None
            digest = hashlib.sha256(raw).hexdigest()
            self.hashes[name] = [*sig, digest]
            self.dirty = True
        self._seen[name] = digest
        return digest

    def get(self, file: Path, kind: str) -> Cached | None:
        """The spec kept for the current bytes of ``file`` read as ``kind``, as a
        :class:`Cached` handle that rebuilds it on first use (None: a miss)."""
        if self.path is None:
            return None
        digest = self.content_hash(file)
        key = f"{kind}:{digest}"
        hit = self.specs.get(key) if digest else None
        if not isinstance(hit, dict) or not isinstance(hit.get("data"), str) or \
                not isinstance(hit.get("name"), str) or not isinstance(hit.get("claims"), list):
            return None
        if hit.get("path") != str(file):
            hit["path"] = str(file)
            self.dirty = True
        overrides = hit.get("overrides", [])
        return Cached(kind, hit["name"], tuple(c for c in hit["claims"] if isinstance(c, str)),
                      hit["data"], tuple(o for o in overrides if isinstance(o, str))
                      if isinstance(overrides, list) else ())

    def put(self, file: Path, kind: str, obj, name: str, claims: Iterable[str],
            overrides: Iterable[str] = ()) -> None:
        """Keep ``obj`` (keyed ``name``, claiming the aliases ``claims``, replacing the specs
        ``overrides``), loaded from the bytes of ``file``; an object whose plain form would
        not rebuild it exactly is not kept."""
        if self.path is None:
            return
        digest = self.content_hash(file)
        if digest is None:
            return
        from .plain import round_trips

        data = round_trips(obj)
        if data is None:
            return
        self.specs[f"{kind}:{digest}"] = {
            "path": str(file), "name": name, "claims": list(claims),
            "overrides": list(overrides),
            "data": json.dumps(data, separators=(",", ":"), allow_nan=False)}
        self.dirty = True

    def _files_key(self, files: Iterable[Path]) -> str | None:
        rows = []
        for f in files:
            digest = self.content_hash(f)
            if digest is None:
                return None
            rows.append((str(f), digest))
        return _digest(sorted(rows))

    def checks(self, files: Iterable[Path]):
        """The cross-file check problems saved for exactly these files with these contents
        (None: not saved, or something changed)."""
        if self.path is None:
            return None
        key = self._files_key(files)
        hit = self.check_sets.get(key) if key else None
        if not isinstance(hit, list):
            return None
        try:
            return [Problem(*(None if x is None else str(x) for x in p)) for p in hit]
        except TypeError:
            return None

    def put_checks(self, files: Iterable[Path], problems) -> None:
        if self.path is None:
            return
        key = self._files_key(files)
        if key is None:
            return
        self.check_sets.pop(key, None)
        self.check_sets[key] = [list(p) for p in problems]
        while len(self.check_sets) > MAX_CHECK_SETS:
            del self.check_sets[next(iter(self.check_sets))]
        self.dirty = True

    def _prune(self) -> None:
        """Drop entries whose spec file is gone, or whose file this run read with other
        content."""
        for key in list(self.specs):
            hit = self.specs[key]
            path = hit.get("path") if isinstance(hit, dict) else None
            if not isinstance(path, str) or not os.path.exists(path):
                del self.specs[key]
                continue
            seen = self._seen.get(path)
            if seen is not None and not key.endswith(":" + seen):
                del self.specs[key]
        for path in list(self.hashes):
            if not os.path.exists(path):
                del self.hashes[path]

    def save(self) -> None:
        """Write the cache atomically (temp file, then rename); on any failure the temp file
        is removed and the old cache stays."""
        if self.path is None or not self.dirty:
            return
        self._prune()
        folder = self.path.parent
        tmp = None
        try:
            body = json.dumps({"specs": self.specs, "checks": self.check_sets,
                               "hashes": self.hashes},
                              separators=(",", ":"), allow_nan=False).encode()
            head = f"{_FORMAT} {_VERSION} {self.stamp} {hashlib.sha256(body).hexdigest()}\n"
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            why = unsafe_folder(folder)
            if why:
                _refuse(folder, why)
                return
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".specs-", suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(head.encode())
                fh.write(body)
            os.replace(tmp, self.path)
            tmp = None
            self.dirty = False
        except (OSError, ValueError):
            pass  # a read-only or full disk only costs speed
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
