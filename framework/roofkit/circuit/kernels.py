"""Engine kernel profiles: which kernel an engine runs for a node, and what it costs.

An engine profile's ``[[kernels]]`` (:class:`roofkit.schema.engine.KernelProfile`) says, per
engine version, weight format, device and attention shape, which compute slot a GEMM or
attention kernel uses and at what efficiency. For a node a kernel covers, the kernel's
constants replace the device roofline's:

    c = flops / (P_slot * e_compute)              P_slot: the roofline's peak of its slot
    m = bytes' / (BW * e_memory)                  BW: the roofline's memory bandwidth
    t = (c^p + m^p)^(1/p)                         p: the roofline's overlap (inf: max)

with ``bytes'`` the node's bytes, its KV read multiplied by the query heads per KV head
when the kernel reads each KV head's cache once per query head (``kv_reads =
"per_query_head"``: TensorRT-LLM's masked multi-head attention before XQA). A GEMM-size
curve of the calibration does not apply to a kernel node: the kernel's efficiency is its
own. The first entry of ``[[kernels]]`` whose conditions all hold covers the node.
"""

from __future__ import annotations

import attrs

from ..errors import ArgumentError, UnknownNameError
from ..schema.engine import KernelProfile, version_key
from .calibrated import combine


@attrs.frozen
class Kernels:
    """The kernel profiles of one engine (at one version) that apply to one workload on
    one device, in the order they are tried."""

    engine: str
    version: str
    rules: tuple[KernelProfile, ...]
    group: int = 1  # query heads per KV head of the workload

    def for_node(self, op: str, mode: str, fmt: str) -> KernelProfile | None:
        """The first rule for a node of kind ``op`` (gemm, attention) in ``mode`` whose
        format (weights for gemm, the KV cache for attention) is ``fmt``."""
        for k in self.rules:
            if k.op == op and mode in k.modes and (not k.formats or fmt in k.formats):
                return k
        return None

    @property
    def label(self) -> str:
        return f"{self.engine} {self.version}"


def engine_spec(registry, name: str):
    """The engine profile of ``specs/engines`` named ``name`` (or an alias), else the one
    whose host time is the host calibration profile ``name``; None when neither exists."""
    try:
        return registry.spec("engines", name)
    except (UnknownNameError, LookupError):
        pass
    cat = registry.catalogues.get("engines") or {}
    for key in cat:
        spec = cat[key]
        if spec.host.calibration == name:
            return spec
    return None


def _on_device(k: KernelProfile, device) -> bool:
    if not k.devices:
        return True
    vendor = (device.vendor or "").lower()
    names = {device.name.lower(), vendor, f"{vendor} {device.category}".strip(),
             device.category}
    return any(d.lower() in names for d in k.devices)


def _in_versions(k: KernelProfile, version: tuple[int, ...]) -> bool:
    if k.since and version < version_key(k.since):
        return False
    return not (k.before and version >= version_key(k.before))


def _fits_shape(k: KernelProfile, group: int, head_dim: int) -> bool:
    if k.query_heads_per_kv and group not in k.query_heads_per_kv:
        return False
    return not (k.head_dims and head_dim not in k.head_dims)


def _canonical(registry, k: KernelProfile) -> KernelProfile:
    """``k`` with its formats as the registry's canonical names (an alias matches too)."""
    if not k.formats:
        return k
    return attrs.evolve(k, formats=[registry.precision(f).name for f in k.formats])


def resolve(registry, engine: str | None, version: str | None, device, workload):
    """The :class:`Kernels` of ``engine`` (a name of :func:`engine_spec`) at ``version``
    (default: the profile's own) for ``workload`` on ``device``; None without an engine, or
    when the engine has no profile or no kernel applies."""
    if not engine:
        return None
    spec = engine_spec(registry, engine)
    if spec is None or not spec.kernels:
        return None
    ver = version or spec.version
    v = version_key(ver)
    if not v:
        raise ArgumentError(f"engine version {ver!r} of {engine} is not a version: give "
                            "dotted numbers such as 0.6.1 (or a build number such as b3166)")
    dims = workload.dims
    heads = int(dims.get("heads", 0) or 0)
    kv_heads = int(dims.get("kv_heads", 0) or heads or 1)
    group = max(heads // max(kv_heads, 1), 1)
    head_dim = int(dims.get("head_dim", 0) or (dims.get("hidden", 0) // heads if heads else 0))
    rules = tuple(_canonical(registry, k) for k in spec.kernels
                  if _on_device(k, device) and _in_versions(k, v) and
                  (k.op != "attention" or _fits_shape(k, group, head_dim)))
    if not rules:
        return None
    return Kernels(spec.name, ver, rules, group)


def node_timer(peak: float, bandwidth: float, overlap: float):
    """``time(flops, bytes, gemms) -> (t, c)`` of a kernel node (see the module docstring)."""
    def time(flops, nbytes, gemms):
        c = flops / peak
        return combine(c, nbytes / bandwidth, overlap), c
    return time


def outside(kernels_used, rows) -> list[str]:
    """The kernels of ``kernels_used`` (``(name, lo, hi)``) whose measured GEMM rows
    ``lo..hi`` do not hold ``rows`` (a number or an array): one sentence each."""
    import numpy as np

    out = []
    for name, lo, hi in kernels_used:
        r = np.asarray(rows, dtype=float)
        if np.any(r < lo) or np.any(r > hi):
            shown = f"{float(r):g}" if r.ndim == 0 else f"{float(r.min()):g}..{float(r.max()):g}"
            out.append(f"kernel {name} outside its measured range: {shown} rows per GEMM, "
                       f"measured at {lo}..{hi}")
    return out
