"""The result surface the fleet results share: ``to_pandas()`` and a compact
``_repr_html_`` table from their ``to_dict()`` (DESIGN.md, results convention)."""

from __future__ import annotations

import html


def frame(rows: list[dict]):
    """A ``pandas.DataFrame`` of ``rows``; needs the ``pandas`` extra."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("to_pandas() needs pandas: pip install 'roofkit[pandas]'") from None
    return pd.DataFrame(rows)


def flat(d: dict, prefix: str = "") -> dict:
    """Nested dicts flattened to ``a.b`` keys (lists kept as they are)."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flat(v, key + "."))
        else:
            out[key] = v
    return out


def html_table(title: str, rows: list[tuple[str, object]]) -> str:
    """A two-column HTML table: a compact view for notebooks, not a dump."""
    def cell(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return html.escape(str(v))
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{cell(v)}</td></tr>"
                   for k, v in rows)
    return f"<table><caption>{html.escape(title)}</caption>{body}</table>"
