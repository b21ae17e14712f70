"""Helpers for testing roofkit plugins: a fresh registry per test, spec files on the fly."""

from __future__ import annotations

import textwrap
from pathlib import Path


def make_registry(*plugins, spec_paths=(), entry_points: bool = False, **kwargs):
    """A fresh registry with the builtins plus ``plugins`` (no entry points by default)."""
    from .registry import build_registry

    return build_registry(plugins=list(plugins), entry_points=entry_points,
                          spec_paths=spec_paths, **kwargs)


def write_spec(root: str | Path, kind: str, name: str, text: str) -> Path:
    """Write ``root/<kind>/<name>.toml`` (dedented) and return its path."""
    path = Path(root) / kind / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def run_cli(capsys, *args, plugins: bool = True):
    """Run the ``roofkit`` command in-process: (exit code, stdout, stderr).

    ``capsys`` is pytest's fixture; argparse refusals (SystemExit) come back as their code.
    ``plugins=False`` adds ``--no-plugins`` (no entry-point plugins).
    """
    from .cli import main

    argv = list(args) if plugins else ["--no-plugins", *args]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err
