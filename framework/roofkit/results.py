"""One convention for every result object (see ``docs/results.md``).

A result class adopts :class:`Result` and declares its headline figures once::

    class ServingEstimate(Result):
        HEADLINE = (Headline("ttft", "ms", "ttft_ms"), Headline("itl", "ms", "itl_ms"), ...)

and gets the whole surface: ``result.q.ttft`` (a pint Quantity, built on access),
``result.ttft_ms`` (the plain float it declares, already there), ``to_dict()`` (its own
``--json`` document: plain floats under unit-suffixed keys), ``to_pandas()``, a short
``repr`` (under 15 lines), ``_repr_html_`` (a small table for notebooks), ``plot()`` where a
picture helps, and ``basis`` and ``plugins`` on every result. Floats stay inside; pint is
imported only when a Quantity is asked for, so a sweep or a simulator that never looks at
units never pays for it.
"""

from __future__ import annotations

import functools
import html
import math
import sys
from collections.abc import Callable

import attrs


@attrs.frozen
class Headline:
    """A headline figure: its name, the unit of its Quantity, and the attribute (or a
    function of the result) giving the plain value in that unit. The attribute name is the
    unit-suffixed key it has in ``to_dict()`` and in the ``--json`` document."""

    name: str
    unit: str
    attr: str | Callable
    label: str = ""
    key_name: str | None = None

    @property
    def key(self) -> str:
        """The unit-suffixed key: the attribute's name, else ``key_name``, else
        ``NAME_UNIT`` (``ttft_ms``, ``throughput_per_s``, ``energy_j``, ``weights_bytes``)."""
        if self.key_name:
            return self.key_name
        if isinstance(self.attr, str):
            return self.attr
        suffix = _suffix(self.unit)
        return f"{self.name}_{suffix}" if suffix else self.name

    def value(self, result):
        return self.attr(result) if callable(self.attr) else getattr(result, self.attr)

    def text(self, result) -> str:
        """The value for people: SI prefixes for SI units, else significant digits."""
        v = self.value(result)
        if v is None:
            return "-"
        dim = _DIMENSION.get(self.unit)
        if dim is not None and not _is_array(v):
            from .units import fmt

            return fmt(float(v), dim)
        return f"{sig(v)} {self.unit}".rstrip()


#: SI units shown with a decimal prefix by :func:`roofkit.units.fmt`
_DIMENSION = {"s": "time", "B": "bytes", "B/s": "bandwidth", "FLOP": "compute",
              "FLOP/s": "throughput", "W": "power", "J": "energy"}


def _suffix(unit: str) -> str:
    return {"1/s": "per_s", "token/s": "tokens_per_s", "B": "bytes", "": "",
            "FLOP": "flop", "FLOP/B": "flop_per_byte"}.get(
        unit, unit.lower().replace("/", "_per_"))


def sig(value, digits: int = 4) -> str:
    """``value`` at ``digits`` significant digits, thousands separated from 10**digits up:
    3.14159 → '3.142', 0.0123456 → '0.01235', 1234.6 → '1235', 123456.7 → '123,457'.
    Arrays show their range; None and non-finite values print as '-' and 'inf'."""
    if value is None:
        return "-"
    if _is_array(value):
        import numpy as np

        if value.size == 0:
            return "[]"
        if value.size == 1:
            return sig(value.reshape(-1)[0].item(), digits)
        return f"{sig(float(np.min(value)), digits)} .. {sig(float(np.max(value)), digits)}"
    if isinstance(value, bool | str):
        return str(value)
    v = float(value)
    if not math.isfinite(v):
        return "inf" if v > 0 else ("-inf" if v < 0 else "nan")
    if v == 0:
        return "0"
    if abs(v) >= 10 ** digits:
        return f"{v:,.0f}"
    text = f"{v:#.{digits}g}"
    if "e" in text:
        return f"{v:.{digits}g}"
    return text.rstrip("0").rstrip(".") if "." in text else text


@functools.cache
def _unit(text: str):
    """A pint Unit of the project registry, parsed once per spelling."""
    from .units import ureg

    return ureg().Unit(text)


class Quantities:
    """``result.q.NAME``: the headline ``NAME`` of a result as a pint Quantity."""

    __slots__ = ("_result",)

    def __init__(self, result):
        self._result = result

    def __getattr__(self, name: str):
        for h in type(self._result).HEADLINE:
            if h.name == name:
                value = h.value(self._result)
                if value is None:
                    return None
                from .units import ureg

                return ureg().Quantity(value, _unit(h.unit or "dimensionless"))
        names = ", ".join(h.name for h in type(self._result).HEADLINE)
        raise AttributeError(f"{type(self._result).__name__} has no headline {name!r}; "
                             f"its headlines: {names}")

    def __dir__(self):
        return [h.name for h in type(self._result).HEADLINE]

    def __repr__(self) -> str:
        return f"<quantities of {type(self._result).__name__}: {', '.join(self.__dir__())}>"


class Result:
    """The result convention as a mixin. A class sets ``HEADLINE`` (figures), ``KIND`` (a
    word for the title) and may override :meth:`title`, :meth:`frame_rows` (the rows of
    ``to_pandas()``; default one row of identity and headline), :meth:`identity` and
    :attr:`PLOT` (the name of its default picture in :mod:`roofkit.plot`)."""

    __slots__ = ()
    HEADLINE: tuple[Headline, ...] = ()
    KIND = "result"
    PLOT: str | None = None

    # -- values --------------------------------------------------------------------------
    @property
    def q(self) -> Quantities:
        """The headline figures as pint Quantities: ``result.q.ttft.to("s")``."""
        return Quantities(self)

    def headline(self) -> dict:
        """Headline key (unit-suffixed) → plain value (float, array or None)."""
        return {h.key: _plain(h.value(self)) for h in self.HEADLINE}

    def identity(self) -> dict:
        """What was estimated: workload, device and the settings that name the result."""
        out = {}
        for name in ("workload", "device", "mode", "batch", "tp", "precision"):
            v = getattr(self, name, None)
            if v is not None and not callable(v):
                out[name] = _plain(v)
        return out

    def title(self) -> str:
        ident = self.identity()
        where = f"{ident.get('workload', '')} on {ident.get('device', '')}".strip()
        return f"{self.KIND} {where}".strip() if where != "on" else self.KIND

    def frame_rows(self) -> list[dict]:
        """The rows of :meth:`to_pandas`: one, identity and headline, by default."""
        row = dict(self.identity())
        row.update(self.headline())
        row["basis"] = _short(getattr(self, "basis", ""), 400)
        return [row]

    # -- output --------------------------------------------------------------------------
    def to_pandas(self):
        """A ``pandas.DataFrame`` of :meth:`frame_rows`; needs the ``pandas`` extra."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("to_pandas() needs pandas: pip install 'roofkit[pandas]'") \
                from None
        rows = self.frame_rows()
        frame = pd.DataFrame(rows)
        frame.attrs.update({"kind": self.KIND, "title": self.title(),
                            "plugins": list(getattr(self, "plugins", ()) or ())})
        return frame

    def plot(self, kind: str | None = None, **kwargs):
        """A matplotlib Figure of this result (``kind`` picks among the pictures
        :mod:`roofkit.plot` draws for it); needs the ``plot`` extra."""
        from . import plot

        return plot.plot_result(self, kind or self.PLOT, **kwargs)

    def _lines(self) -> list[tuple[str, str]]:
        return [(h.label or h.name, h.text(self)) for h in self.HEADLINE]

    def __repr__(self) -> str:
        lines = [f"<{type(self).__name__} {self.title()}"]
        lines += [f"  {name:<22} {text}" for name, text in self._lines()[:10]]
        lines.append(f"  {'basis':<22} {_short(getattr(self, 'basis', ''), 70)}")
        plugins = getattr(self, "plugins", ()) or ()
        lines.append(f"  {'plugins':<22} {_short(', '.join(plugins), 70)}>")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        e = html.escape
        rows = "".join(f"<tr><th style='text-align:left'>{e(n)}</th>"
                       f"<td style='text-align:right'>{e(t)}</td></tr>"
                       for n, t in self._lines())
        basis = e(_short(getattr(self, "basis", ""), 200))
        plugins = e(", ".join(getattr(self, "plugins", ()) or ()))
        return (f"<table><caption>{e(type(self).__name__)}: "
                f"{e(self.title())}</caption>{rows}"
                f"<tr><th style='text-align:left'>basis</th><td>{basis}</td></tr>"
                f"<tr><th style='text-align:left'>plugins</th><td>{plugins}</td></tr>"
                "</table>")


def _is_array(v) -> bool:
    """Whether ``v`` is a numpy array (numpy is not imported for the question: a value can
    be one only once something imported numpy)."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(v, np.ndarray)


def _plain(v):
    np = sys.modules.get("numpy")
    if np is None:
        return v
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


def _short(text, n: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[: n - 3] + "..."
