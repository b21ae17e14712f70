"""Pictures of results, as matplotlib Figures (the ``plot`` extra).

``roofline`` (the device's ceilings per compute slot and bandwidth tier, with the circuit's
nodes and the whole step as points by arithmetic intensity), ``sweep`` (two columns of a
sweep with its Pareto front), ``breakdown`` (a stacked bar per node or op of a decode,
prefill or serve), ``serve`` (inter-token latency over the output steps), ``memory`` (what a
fit holds against usable memory) and ``validation`` (predicted against measured).

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot (no global
state, no display needed); :func:`save` writes it as PNG or SVG, with text kept as text in
SVG. The marks carry ``gid`` names (``node-<id>``, ``ceiling-<slot>``, ``bandwidth-<tier>``,
``step``, ``pareto``) so a test or a web page can find them.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import RoofkitError

INSTALL = "plotting needs matplotlib: pip install 'roofkit[plot]' (or pip install matplotlib)"


def figure(width: float = 7.5, height: float = 5.0):
    """A new Figure (object-oriented matplotlib, no pyplot); a clear error without it."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise RoofkitError(INSTALL) from None
    return Figure(figsize=(width, height), layout="constrained")


def log_axis(ax, which: str, dimension: str | None = None) -> None:
    """A logarithmic axis with plain tick labels (SI prefixes for a ``dimension`` of
    :func:`roofkit.units.fmt`, else ``%g``) and no minor ticks: readable, and quick to draw
    (no mathtext)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    from .. import units

    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_locator(LogLocator(base=10, numticks=12))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(
        (lambda v, _: units.fmt(v, dimension, 3)) if dimension else (lambda v, _: f"{v:g}")))


def gid(kind: str, name: str) -> str:
    """An SVG id for a mark: ``node-attention.qkv``."""
    return f"{kind}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', str(name))}"


def target(path) -> Path:
    """``path`` checked as a picture to write: a .png, .svg or .pdf name, not a folder, in
    a folder that exists (checked before a long computation, not after)."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise RoofkitError(f"cannot write a plot as {str(path)!r}: give a file ending in .png, "
                           ".svg or .pdf")
    if path.is_dir():
        raise RoofkitError(f"cannot write a plot as {str(path)!r}: it is a folder; give a "
                           "file name inside it")
    if not path.parent.is_dir():
        raise RoofkitError(f"cannot write a plot as {str(path)!r}: the folder "
                           f"{str(path.parent)!r} does not exist; create it first")
    return path


def save(fig, path) -> Path:
    """Write ``fig`` to ``path`` (.png, .svg or .pdf; text stays text in SVG)."""
    import matplotlib

    path = target(path)
    fmt = path.suffix.lower().lstrip(".")
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "roofkit"}):
        fig.savefig(path, format=fmt, dpi=150, metadata={"Date": None} if fmt == "svg" else None)
    return path


def plot_result(result, kind: str | None, **kwargs):
    """The picture ``kind`` of ``result`` (its default when None)."""
    from . import pictures

    kinds = pictures.KINDS_OF.get(type(result).__name__, ())
    if kind is None:
        if not kinds:
            raise RoofkitError(f"no picture is drawn for a {type(result).__name__}")
        kind = kinds[0]
    if kind not in kinds:
        raise RoofkitError(f"a {type(result).__name__} is drawn as {', '.join(kinds)}, not "
                           f"{kind!r}")
    return pictures.DRAW[kind](result, **kwargs)
