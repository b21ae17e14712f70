"""A progress bar for long work (validation, sweeps over an executor), on stderr only.

It draws only inside :func:`allowed` (the command line enters it unless the output is
``--json``, CSV or Markdown) and only when stderr is a terminal, so pipes, files, notebooks
and library callers see nothing::

    with progress.allowed():
        with progress.Bar(len(cases), "validate") as bar:
            for case in cases:
                ...
                bar.update()
"""

from __future__ import annotations

import contextlib
import sys
import time
from contextvars import ContextVar

_ALLOWED: ContextVar[bool] = ContextVar("roofkit_progress", default=False)


@contextlib.contextmanager
def allowed(on: bool = True):
    """Let :class:`Bar` draw (when stderr is a terminal) within the block."""
    token = _ALLOWED.set(on)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


class Bar:
    """``label [#######.......] done/total`` redrawn in place at most 10 times a second."""

    WIDTH = 28

    def __init__(self, total: int, label: str, stream=None):
        self.total = max(int(total), 0)
        self.label = label
        self.done = 0
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.active = bool(_ALLOWED.get() and self.total and isatty is not None and isatty())
        self._last = 0.0

    def __enter__(self) -> Bar:
        self._draw(force=True)
        return self

    def update(self, n: int = 1) -> None:
        self.done = min(self.done + n, self.total)
        self._draw(force=self.done == self.total)

    def _draw(self, force: bool = False) -> None:
        if not self.active:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        filled = self.WIDTH * self.done // self.total
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] "
                          f"{self.done}/{self.total}")
        self.stream.flush()

    def __exit__(self, *exc) -> None:
        if self.active:
            self.stream.write("\r" + " " * (len(self.label) + self.WIDTH + 24) + "\r")
            self.stream.flush()
