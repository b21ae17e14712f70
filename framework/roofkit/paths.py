"""Where roofkit's builtin specs live: inside the wheel, or in the checkout."""

from __future__ import annotations

import functools
from pathlib import Path


@functools.cache
def builtin_specs_dir() -> Path:
    """The builtin ``specs/`` folder: ``roofkit/_specs`` in a wheel, ``specs/`` in a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_specs", here.parents[1] / "specs"):
        if (candidate / "devices").is_dir():
            return candidate
    raise FileNotFoundError(
        f"roofkit's builtin specs are missing (looked in {here / '_specs'} and "
        f"{here.parents[1] / 'specs'}); reinstall roofkit")
