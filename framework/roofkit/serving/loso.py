"""Leave-one-source-out: score each validation source with every calibration constant
derived from it removed.

A source is the publisher's origin of a URL: a GitHub repository (``github:owner/repo``,
forks and renames mapped to the upstream), an arXiv paper, a CI organisation
(``buildkite:vllm``), else the web domain (``amd.com``). A calibration constant (one
measured table of ``specs/calibration``: ``h100-sxm:bandwidth``,
``host:engines.tensorrt-llm-session``) is derived from its own source's origin. For the cases
of origin ``O`` the estimator runs on a registry whose calibrations lack every constant of
origin ``O``: a removed measurement falls back to the datasheet, a removed engine profile
leaves the engine's host time out, save the components another source measured too (their
``also``, which stand in). Every other constant is independent of ``O`` by its origin, and
the report says so per constant.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

#: repositories that are one source under two names: forks read for an upstream file,
#: renamed repositories
SAME_ORIGIN = {
    "github:samuel-bohman/ai-benchmarking-guide": "github:azure/ai-benchmarking-guide",
    "github:openai/triton": "github:triton-lang/triton",
    "github:ggerganov/llama.cpp": "github:ggml-org/llama.cpp",
}

_GITHUB = re.compile(r"^https?://(?:www\.)?github\.com/([^/#?]+)/([^/#?]+)", re.I)
_RAW = re.compile(r"^https?://raw\.githubusercontent\.com/([^/#?]+)/([^/#?]+)", re.I)
_ARXIV = re.compile(r"^https?://(?:www\.)?arxiv\.org/(?:abs|pdf)/([0-9.]+)", re.I)
_CI = re.compile(r"^https?://(?:www\.)?buildkite\.com/([^/#?]+)", re.I)
_HOST = re.compile(r"^https?://(?:www\.)?([^/#?:]+)", re.I)

#: the calibration tables a constant can be, in :meth:`Calibration.measurements` order
TABLES = ("compute", "gemm", "mixed", "attention", "allreduce", "host_link", "launch",
          "engines")


def origin(url: str) -> str:
    """The publisher's origin of ``url`` (see the module docstring)."""
    url = url.strip()
    for pattern, tag in ((_GITHUB, "github"), (_RAW, "github")):
        m = pattern.match(url)
        if m:
            key = f"{tag}:{m[1].lower()}/{m[2].lower().removesuffix('.git')}"
            return SAME_ORIGIN.get(key, key)
    m = _ARXIV.match(url)
    if m:
        return f"arxiv:{m[1].split('v')[0]}"
    m = _CI.match(url)
    if m:
        return f"buildkite:{m[1].lower()}"
    m = _HOST.match(url)
    return m[1].lower() if m else url


@attrs.frozen
class Constant:
    """One measured calibration table: ``calibration:path`` and the origin of its source."""

    calibration: str
    path: str
    origin: str

    @property
    def name(self) -> str:
        return f"{self.calibration}:{self.path}"


def constants(registry) -> list[Constant]:
    """Every measured constant of the registry's calibrations."""
    cat = registry.catalogues.get("calibration") or {}
    return [Constant(key, path, origin(m.source)) for key in cat
            for path, m in cat[key].measurements()]


#: the cited tables of an engine profile (``specs/engines``)
ENGINE_TABLES = ("scheduler", "cuda_graphs", "host")


def engine_constants(registry) -> list[Constant]:
    """The cited tables of every engine profile of ``specs/engines`` (``engine:vllm-v1``,
    ``host``): the simulator needs a profile, so these are never removed; a case sharing an
    origin with one is in sample for it, and :func:`statements` says so."""
    cat = registry.catalogues.get("engines") or {}
    out = []
    for key in cat:
        e = cat[key]
        for table in ENGINE_TABLES:
            src = getattr(getattr(e, table, None), "source", "")
            if src:
                out.append(Constant(f"engine:{key}", table, origin(src)))
    return out


def kernel_constants(registry) -> list[Constant]:
    """The measured kernel profiles of ``specs/engines`` (an efficiency below 1):
    ``engine:llama.cpp:kernels.mmq``. A profile without a measured number (which kernel
    runs, how often it reads the KV cache: read from the kernel's source) is not one."""
    cat = registry.catalogues.get("engines") or {}
    return [Constant(f"engine:{key}", f"kernels.{k.name}", origin(k.source))
            for key in cat for k in cat[key].kernels if k.measured]


def frontend_constants(registry) -> list[Constant]:
    """The measured frontends of ``specs/engines`` (``engine:vllm-v1:frontend``)."""
    cat = registry.catalogues.get("engines") or {}
    return [Constant(f"engine:{key}", "frontend", origin(cat[key].frontend.source))
            for key in cat if cat[key].frontend.active]


def strip(cal, drop: Iterable[str]):
    """``cal`` without the measured tables at the key paths ``drop``. An engine profile
    goes component by component: dropping ``engines.<p>`` removes the components its own
    source measured and keeps those that cite a source of their own (each removed by its
    path, ``engines.<p>.components.<c>``); a component's further measurements
    (``...components.<c>.also.<i>``) go one by one, and those left keep it; a profile left
    with none is removed."""
    drop = set(drop)
    if not drop:
        return cal
    changes = {}
    if "bandwidth" in drop:
        changes["bandwidth"] = None
    for table in TABLES:
        if table == "engines":
            continue
        mapping = getattr(cal, table)
        kept = {k: v for k, v in mapping.items() if f"{table}.{k}" not in drop}
        if len(kept) != len(mapping):
            changes[table] = kept
    profiles, changed = {}, False
    for name, prof in cal.engines.items():
        whole = f"engines.{name}" in drop
        comps = {}
        for c, t in prof.components.items():
            at = f"engines.{name}.components.{c}"
            kept = _kept(t, at in drop or (whole and not t.source),
                         {i for i in range(len(t.also)) if f"{at}.also.{i}" in drop})
            if kept is not None:
                comps[c] = kept
        if whole or comps != prof.components:
            changed = True
            if not comps:
                continue
            prof = attrs.evolve(prof, components=comps)
        profiles[name] = prof
    if changed:
        changes["engines"] = profiles
    return attrs.evolve(cal, **changes)


def _kept(table, own: bool, also: set[int]):
    """A host-time component without its own measurement (``own``) and its further ones
    numbered ``also``: the first measurement left stands in for its own; None when none is
    left."""
    rest = [m for i, m in enumerate(table.also) if i not in also]
    if not own:
        return table if len(rest) == len(table.also) else attrs.evolve(table, also=rest)
    if not rest:
        return None
    first = {f.name: getattr(rest[0], f.name) for f in attrs.fields(type(rest[0]))}
    return attrs.evolve(table, **first, also=rest[1:])


def without(registry, source: str):
    """A registry like ``registry`` whose calibrations lack every constant of origin
    ``source``; ``(registry, removed constant names)``. The same registry when none is."""
    from ..catalogue import Catalogue, Entry
    from ..registry import Registry

    removed = [c for c in constants(registry) if c.origin == source]
    kernels = [c for c in (*kernel_constants(registry), *frontend_constants(registry))
               if c.origin == source]
    if not removed and not kernels:
        return registry, ()
    cat = registry.catalogues["calibration"]
    entries = {}
    for key in cat:
        e = cat.entry(key)
        drop = [c.path for c in removed if c.calibration == key]
        entries[key] = Entry(strip(e.obj, drop), e.origin, e.layer, e.rank, key=e.key,
                             claims=e.claims, overrides=e.overrides) if drop else e
    cats = dict(registry.catalogues)
    cats["calibration"] = Catalogue("calibration", entries, dict(cat.aliases))
    if kernels:
        eng = registry.catalogues["engines"]
        kept = {}
        for key in eng:
            e = eng.entry(key)
            drop = {c.path.removeprefix("kernels.") for c in kernels
                    if c.calibration == f"engine:{key}"}
            obj = attrs.evolve(e.obj, kernels=[k for k in e.obj.kernels
                                               if not (k.measured and k.name in drop)])
            if "frontend" in drop:
                obj = attrs.evolve(obj, frontend=type(obj.frontend)())
            kept[key] = Entry(obj, e.origin, e.layer, e.rank, key=e.key, claims=e.claims,
                              overrides=e.overrides) if drop else e
        cats["engines"] = Catalogue("engines", kept, dict(eng.aliases))
        removed = [*removed, *kernels]
    reg = Registry(tables=registry._tables, catalogues=cats, plugins=registry.plugins,
                   converter=registry.converter, spec_layers=registry.spec_layers)
    return reg, tuple(c.name for c in removed)


def statements(registry, case_origins: Iterable[str], engines: bool = False) -> list[dict]:
    """Per constant: its origin and why it may score each case (independent: no case comes
    from its origin) or which cases it is removed for; with ``engines`` the engine profiles'
    cited tables too, which are kept (``cases_in_sample``) where an origin is shared."""
    counts: dict[str, int] = {}
    for o in case_origins:
        counts[o] = counts.get(o, 0) + 1
    out = []
    for c in (*constants(registry), *kernel_constants(registry),
              *frontend_constants(registry)):
        n = counts.get(c.origin, 0)
        text = (f"removed when scoring the {n} case(s) from {c.origin}" if n else
                f"independent: no validation case comes from {c.origin}")
        out.append({"constant": c.name, "origin": c.origin, "cases_removed_for": n,
                    "statement": text})
    cat = registry.catalogues.get("engines") or {}
    for key in cat:
        for k in cat[key].kernels:
            if not k.measured:
                out.append({"constant": f"engine:{key}:kernels.{k.name}",
                            "origin": origin(k.source), "cases_removed_for": 0,
                            "statement": "independent: a structural profile (which kernel "
                                         "runs, its slot, how often it reads the KV cache, "
                                         "read from the engine's source), no measured number"})
    for c in engine_constants(registry) if engines else ():
        n = counts.get(c.origin, 0)
        text = (f"kept (the simulator needs the profile): the {n} case(s) from {c.origin} are "
                "in sample for it" if n else
                f"independent: no validation case comes from {c.origin}")
        out.append({"constant": c.name, "origin": c.origin, "cases_removed_for": 0,
                    "cases_in_sample": n, "statement": text})
    return out
