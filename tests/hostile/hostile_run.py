"""Run roofkit as a hostile user would, under a deadline, and check the promises every case
keeps: no traceback, an exit code of 0, 1 or 2, and with ``--json`` a failure that is one
parseable error object on stdout (docs/guarantees.md)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from typing import NamedTuple

from deadline import deadline

#: seconds any one case may take before it counts as a hang
TIMEOUT_S = 60

#: the keys of the JSON error object (roofkit.cli.failure)
ERROR_KEYS = {"kind", "message", "file", "key", "hint", "problems"}


class Outcome(NamedTuple):
    code: int
    out: str
    err: str


def run_cli(*argv, timeout: int = TIMEOUT_S) -> Outcome:
    """``roofkit ARGV`` in this process (``main``, as the console script calls it)."""
    from roofkit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with deadline(timeout), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code
    return Outcome(code, out.getvalue(), err.getvalue())


def run_script(*argv, timeout: int = TIMEOUT_S, env: dict | None = None) -> Outcome:
    """``python -m roofkit.cli ARGV`` in a fresh process, killed past ``timeout``."""
    proc = subprocess.run([sys.executable, "-m", "roofkit.cli", *map(str, argv)],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


def kept_promises(o: Outcome, json_mode: bool = False) -> dict | None:
    """Assert the promises of every case; with ``json_mode`` return the error object of a
    failure (None on success)."""
    assert "Traceback" not in o.err, o.err
    assert o.code in (0, 1, 2), (o.code, o.err)
    if not json_mode or o.code == 0:
        return None
    doc = json.loads(o.out)  # the whole of stdout: one document, nothing before or after
    assert set(doc) == {"error"}, doc
    error = doc["error"]
    assert set(error) == ERROR_KEYS, error
    assert isinstance(error["message"], str) and error["message"]
    return error
