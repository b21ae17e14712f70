"""A wall-clock guard for hostile-input tests: a case that hangs fails instead of blocking."""

from __future__ import annotations

import contextlib
import signal
import threading


@contextlib.contextmanager
def deadline(seconds: float = 10.0):
    """Raise TimeoutError in the block after ``seconds`` (SIGALRM; the main thread only,
    elsewhere the block runs unguarded)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not \
            threading.main_thread():
        yield
        return

    def _fire(signum, frame):
        raise TimeoutError(f"hostile input ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
