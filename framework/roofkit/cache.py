"""A cache of loaded spec files, so a warm start skips TOML parsing and pint.

One cache file per installation (its name hashes the path of the ``roofkit`` package, so an
editable checkout and a wheel install never overwrite each other's). Entries are keyed by
absolute path, mtime and size, under a stamp of roofkit's version, the sources of
``roofkit`` and ``roofkit_builtins``, the plugin distributions that loaded and the plugin
spec folders: any change to code, plugins or spec folders empties the cache. It also keeps
the result of the cross-file checks (a workload against the circuits and op rules it lowers
with) for one exact set of spec files, mtimes and sizes; a changed, added or removed file
runs them again. The cache is a speed-up only; ``ROOFKIT_NO_CACHE=1`` turns it off,
``ROOFKIT_CACHE_DIR`` moves it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from collections.abc import Iterable
from pathlib import Path

_VERSION = 2


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


def cache_file(install: str | Path | None = None) -> Path | None:
    """The cache file of the roofkit installed at ``install`` (default: this one), named by a
    hash of that path; None when ``ROOFKIT_NO_CACHE`` is set."""
    if os.environ.get("ROOFKIT_NO_CACHE"):
        return None
    base = os.environ.get("ROOFKIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "roofkit")
    install = str(Path(install or Path(__file__).parent).resolve())
    digest = hashlib.sha256(install.encode()).hexdigest()[:16]
    return Path(base) / f"specs-{digest}.pickle"


class SpecCache:
    """Loaded specs by (file, kind), valid while the file's mtime and size and the stamp hold.

    :param spec_dirs: the plugin spec folders of this registry.
    :param plugins: ``(distribution, version)`` of every plugin distribution that loaded.
    """

    def __init__(self, spec_dirs: Iterable = (), plugins: Iterable = ()):
        self.path = cache_file()
        self.stamp = stamp(spec_dirs, plugins)
        self.entries: dict = {}
        self.dirty = False
        if self.path is None:
            return
        try:
            with self.path.open("rb") as fh:
                stamp_, entries = pickle.load(fh)
            if stamp_ == self.stamp:
                self.entries = entries
        except Exception:  # missing, unreadable or from another version: start empty
            self.entries = {}

    @staticmethod
    def _key(file: Path):
        st = file.stat()
        return (st.st_mtime_ns, st.st_size)

    def get(self, file: Path, kind: str):
        hit = self.entries.get((str(file), kind))
        if hit is not None and hit[0] == self._key(file):
            return hit[1]
        return None

    def put(self, file: Path, kind: str, obj) -> None:
        if self.path is None:
            return
        self.entries[(str(file), kind)] = (self._key(file), obj)
        self.dirty = True

    def checks(self, files: Iterable[Path]):
        """The cross-file check problems saved for exactly this set of files at these mtimes
        and sizes (None: not saved, or something changed)."""
        hit = self.entries.get(("__checks__", ""))
        if hit is not None and hit[0] == self._files_key(files):
            return hit[1]
        return None

    def put_checks(self, files: Iterable[Path], problems) -> None:
        if self.path is None:
            return
        self.entries[("__checks__", "")] = (self._files_key(files), list(problems))
        self.dirty = True

    @classmethod
    def _files_key(cls, files: Iterable[Path]) -> tuple:
        return tuple(sorted((str(f), cls._key(f)) for f in files))

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".specs-")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump((self.stamp, self.entries), fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.path)
            self.dirty = False
        except OSError:
            pass  # a read-only home only costs speed
