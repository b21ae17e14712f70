"""The largest request sizes roofkit accepts, and the checks every entry point shares.

A count past its bound is refused with an :class:`~roofkit.errors.ArgumentError` that names
the bound, rather than overflowing (an integer too large for a float, a uint64 that wraps to
-1 in an int64 array), returning an infinite footprint, or exhausting memory (``serve``
costs each of its ``O - 1`` decode steps in one array). The bounds sit far above any real
deployment and far below where float arithmetic or memory gives out:

======================  ===========  ====================================================
bound                   value        what it bounds
======================  ===========  ====================================================
``MAX_BATCH``           2**24        sequences, samples or requests in one batch
                        (16,777,216) (``batch``, ``batch_size``, ``seqs``, requests)
``MAX_TOKENS``          2**24        tokens of one sequence: a context, a prompt, a
                        (16,777,216) training ``seq_len`` (published windows reach 10 M)
``MAX_OUTPUT_TOKENS``   2**20        tokens one request generates (``output_len``): one
                        (1,048,576)  array element per decode step
``MAX_DEVICES``         2**20        devices of a parallel group (``tp``, ``dp_size``)
``MAX_REQUESTS``        2**20        requests one load simulation serves (``simulate``
                        (1,048,576)  steps through every one; about 2 ms each)
======================  ===========  ====================================================
"""

from __future__ import annotations

import math
import numbers

from .errors import ArgumentError, shown

MAX_BATCH = 1 << 24
MAX_TOKENS = 1 << 24
MAX_OUTPUT_TOKENS = 1 << 20
MAX_DEVICES = 1 << 20
MAX_REQUESTS = 1 << 20

#: the bound of each named count (the name as the public calls spell it) and its label
BOUNDS = {
    **dict.fromkeys(("batch", "batch_size", "batch_sizes", "seqs", "max_requests",
                     "concurrency"), ("MAX_BATCH", MAX_BATCH)),
    "requests": ("MAX_REQUESTS", MAX_REQUESTS),
    **dict.fromkeys(("context", "contexts", "tokens", "input_len", "seq_len", "seq_lens",
                     "input_len + output_len"),
                    ("MAX_TOKENS", MAX_TOKENS)),
    "output_len": ("MAX_OUTPUT_TOKENS", MAX_OUTPUT_TOKENS),
    **dict.fromkeys(("tp", "dp_size"), ("MAX_DEVICES", MAX_DEVICES)),
}



def _key(name: str) -> str:
    return name.split("[", 1)[0].lstrip("-").replace("-", "_")


def bound_of(name: str) -> int | None:
    """The upper bound of the count ``name`` (``batch[0]`` reads as ``batch``), or None."""
    hit = BOUNDS.get(_key(name))
    return None if hit is None else hit[1]


def describe(name: str, high: int) -> str:
    """``"at most 16,777,216 (roofkit.bounds.MAX_BATCH = 2**24)"``: the bound in words."""
    hit = BOUNDS.get(_key(name))
    label = hit[0] if hit is not None and hit[1] == high else None
    power = f" = 2**{high.bit_length() - 1}" if high > 0 and high & (high - 1) == 0 else ""
    where = f" (roofkit.bounds.{label}{power})" if label else ""
    return f"at most {high:,}{where}"


def too_large(name: str, value, high: int) -> ArgumentError:
    """The error for a count above its bound."""
    return ArgumentError(f"{name} must be {describe(name, high)}, got {shown(value, 60)}: "
                         "larger requests are outside what roofkit models")


def check_int(name: str, value: int, high: int | None = None) -> int:
    """``value`` (an int already checked >= its minimum) within the bound of ``name``."""
    high = bound_of(name) if high is None else high
    if high is not None and value > high:
        raise too_large(name, value, high)
    return value


def check_number(name: str, value, high: int | None = None):
    """A float or int count within the bound of ``name`` (a float ``1e300`` is refused)."""
    high = bound_of(name) if high is None else high
    if high is not None and isinstance(value, numbers.Real) and not (value <= high):
        if isinstance(value, float) and math.isnan(value):
            return value  # the caller's finiteness check names NaN
        raise too_large(name, value, high)
    return value


def check_array(name: str, arr, high: int | None = None):
    """Every element of an integer or float array within the bound of ``name`` (compared in
    the array's own dtype, so a uint64 above 2**63 is seen before any cast to int64)."""
    high = bound_of(name) if high is None else high
    if high is not None and arr.size and (arr > high).any():
        raise too_large(name, arr[arr > high].flat[0].item(), high)
    return arr
