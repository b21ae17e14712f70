"""A cache of loaded spec files, so a warm start skips TOML parsing and pint.

Entries are keyed by absolute path, mtime and size, under a stamp of roofkit's version and
schema sources: any edit to a spec or to the schema invalidates the entry. The cache is a
speed-up only; ``ROOFKIT_NO_CACHE=1`` turns it off, ``ROOFKIT_CACHE_DIR`` moves it.
"""

from __future__ import annotations

import functools
import os
import pickle
import tempfile
from pathlib import Path

_VERSION = 1


@functools.cache
def _stamp() -> tuple:
    """roofkit's version and the mtimes of its sources: any code change invalidates."""
    here = Path(__file__).resolve().parent
    files = sorted(here.rglob("*.py")) + [here / "units.txt"]
    from . import __version__

    return (_VERSION, __version__, *((str(f), f.stat().st_mtime_ns) for f in files))


def _path() -> Path | None:
    if os.environ.get("ROOFKIT_NO_CACHE"):
        return None
    base = os.environ.get("ROOFKIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "roofkit")
    return Path(base) / "specs.pickle"


class SpecCache:
    def __init__(self):
        self.path = _path()
        self.entries: dict = {}
        self.dirty = False
        if self.path is None:
            return
        try:
            with self.path.open("rb") as fh:
                stamp, entries = pickle.load(fh)
            if stamp == _stamp():
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

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".specs-")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump((_stamp(), self.entries), fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.path)
            self.dirty = False
        except OSError:
            pass  # a read-only home only costs speed
