"""Which numeric format each weight role, the activations, the KV cache and the recurrent
state use: the per-checkpoint precision table.

For a weight role ``r`` (``attention``, ``mlp``, ``experts``, ``embedding``...) and for
``activations`` the first that names it wins:

1. the call's ``formats={"experts": "nvfp4"}``;
2. the workload's ``[formats]`` table (the checkpoint: ``experts = "mxfp4"``);
3. the template's ``[formats]`` pins (embedding, lm_head, norms and routers stay bf16);
4. the call's ``precision=``;
5. the workload's ``formats.default``; then ``bf16``.

``activations`` is the format a matrix op reads its activation operand in (W8A8 FP8 reads
FP8): the call's, then the workload's, then the one the default weight format declares
(weight-only AWQ int4, GGUF q4_K, NF4 compute beside 16 bits), then the default itself.
The *stream* is the format activations are kept in between kernels: the residual stream,
matrix outputs, norms, the all-reduce message. Engines that quantize activations for their
GEMMs (FP8, INT8, FP4) quantize at the GEMM input and keep the stream in 16 bits, so:
``formats["stream"]`` (call, then workload) > the activations format when it has 16 bits or
more > ``bf16``.

The KV cache: ``kv_cache_dtype=`` > ``formats["kv"]`` (call, then workload) > ``bf16``.
The GatedDeltaNet recurrent state: ``ssm_h_dtype=`` > ``formats["state"]`` > ``f32``, one of
the reference's ``f32`` (4 B), ``f16``, ``f16-pool``, ``bf16`` (2 B) (or their aliases
``fp32``, ``fp16``...); Mamba and Mamba2 states are f32 whatever it says (their rule fixes
4 B, as the reference does).

A role the call's ``formats=`` names must be a weight role of the template's nodes or one of
the special roles (``default``, ``activations``, ``kv``, ``state``): a typo is refused with the
closest role, never ignored.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ..errors import SpecError
from ..types import Precision

SPECIAL_ROLES = ("default", "activations", "stream", "kv", "state")

#: The recurrent-state element formats the reference accepts (``ssm_h_dtype``), by the
#: precision they resolve to: f32 (4 B), f16 and bf16 (2 B). ``f16-pool`` (an f16 state
#: kept in a pool) is stored as f16.
STATE_FORMATS = ("fp32", "fp16", "bf16")
STATE_ALIASES = {"f16-pool": "fp16"}
STATE_NAMES = ("f32", "f16", "f16-pool", "bf16")


@attrs.frozen
class Formats:
    """Resolved formats: one :class:`Precision` per role asked for, and the rest."""

    table: Mapping[str, Precision]
    fallback: Precision
    activation: Precision
    kv: Precision
    state: Precision
    stream: Precision
    origin: Mapping[str, str] = attrs.field(factory=dict)  # role -> where its format came from
    state_name: str = ""  # the state format as asked for ("f16-pool"); default state.name

    @property
    def state_label(self) -> str:
        return self.state_name or self.state.name

    def weight(self, role: str) -> Precision:
        return self.table.get(role, self.fallback)

    def key(self) -> tuple:
        return (tuple(sorted((k, v.name) for k, v in self.table.items())), self.fallback.name,
                self.activation.name, self.kv.name, self.state.name, self.stream.name)


def resolve_formats(registry, template, workload, *, precision=None, formats=None,
                    kv_cache_dtype=None, ssm_h_dtype=None, roles=()) -> Formats:
    """Resolve every role in ``roles`` (plus activations, KV and state) to a Precision."""
    formats = {k.lower(): v for k, v in (formats or {}).items()}
    ckpt = {k.lower(): v for k, v in workload.formats.items()}
    pins = {k.lower(): v for k, v in template.formats.items()}
    if roles:
        check_roles(formats, roles, template.name)

    def prec(name, what):
        try:
            return registry.precision(name)
        except LookupError as exc:
            raise SpecError(f"{what}: {exc}") from None

    default_name, default_src = "bf16", "roofkit default"
    if "default" in ckpt:
        default_name, default_src = ckpt["default"], "workload formats.default"
    if precision is not None:
        p = precision.name if isinstance(precision, Precision) else str(precision)
        default_name, default_src = p, "precision="
    if "default" in formats:
        default_name, default_src = formats["default"], "formats=default"
    table, origin = {}, {}
    for role in {*roles, *ckpt, *formats, *pins} - set(SPECIAL_ROLES):
        for src_name, src in (("formats=", formats), ("workload formats", ckpt),
                              ("template pin", pins)):
            if role in src:
                table[role] = prec(src[role], f"{src_name} {role}")
                origin[role] = src_name
                break
        else:
            table[role] = prec(default_name, f"{default_src} for {role}")
            origin[role] = default_src
    fallback = prec(default_name, default_src)
    if "activations" in formats:
        act, origin["activations"] = prec(formats["activations"], "formats=activations"), "formats="
    elif "activations" in ckpt:
        act, origin["activations"] = prec(ckpt["activations"], "workload formats.activations"), \
            "workload formats"
    elif fallback.activations:
        act = prec(fallback.activations, f"{fallback.name} activations")
        origin["activations"] = f"{fallback.name} computes beside {act.name}"
    else:
        act, origin["activations"] = fallback, default_src
    if "stream" in formats:
        stream, origin["stream"] = prec(formats["stream"], "formats=stream"), "formats="
    elif "stream" in ckpt:
        stream, origin["stream"] = prec(ckpt["stream"], "workload formats.stream"), \
            "workload formats"
    elif act.bits_per_element >= 16:
        stream, origin["stream"] = act, origin["activations"]
    else:
        stream, origin["stream"] = prec("bf16", "stream default"), \
            f"16-bit stream beside {act.name} GEMM inputs"
    if kv_cache_dtype is not None:
        kv, origin["kv"] = prec(kv_cache_dtype, "kv_cache_dtype"), "kv_cache_dtype="
    elif "kv" in formats:
        kv, origin["kv"] = prec(formats["kv"], "formats=kv"), "formats="
    elif "kv" in ckpt:
        kv, origin["kv"] = prec(ckpt["kv"], "workload formats.kv"), "workload formats"
    else:
        kv, origin["kv"] = prec("bf16", "kv default"), "roofkit default"
    def state(name, what):
        key = str(name).strip().lower()
        p = prec(STATE_ALIASES.get(key, name), what)
        if p.name not in STATE_FORMATS:
            raise SpecError(f"{what}: the recurrent state is kept at one of "
                            f"{', '.join(STATE_NAMES)} (f32 4 B; f16, f16-pool, bf16 2 B), "
                            f"not {name!r}")
        return p, (key if key in STATE_ALIASES else "")

    if ssm_h_dtype is not None:
        (st, st_name), origin["state"] = state(ssm_h_dtype, "ssm_h_dtype"), "ssm_h_dtype="
    elif "state" in formats:
        (st, st_name), origin["state"] = state(formats["state"], "formats=state"), "formats="
    elif "state" in ckpt:
        (st, st_name), origin["state"] = state(ckpt["state"], "workload formats.state"), \
            "workload formats"
    else:
        (st, st_name), origin["state"] = state("fp32", "state default"), "roofkit default"
    return Formats(table=table, fallback=fallback, activation=act, kv=kv, state=st,
                   stream=stream, origin=origin, state_name=st_name)


def check_roles(formats: Mapping[str, object], roles, template: str) -> None:
    """Refuse a ``formats=`` role that no node of ``template`` has (``expert`` for
    ``experts``), naming the closest role and every role the circuit has."""
    from ..errors import UnknownNameError, closest

    known = sorted(set(roles))
    for role in formats:
        if role in SPECIAL_ROLES or role in roles:
            continue
        near = closest(role, [*known, *SPECIAL_ROLES])
        hint = f"Did you mean {', '.join(map(repr, near))}? " if near else ""
        raise UnknownNameError(
            "format role", role, (),
            hint=f"{hint}Weight roles of template {template!r}: {', '.join(known)}; and "
                 f"{', '.join(SPECIAL_ROLES)} (the fallback, GEMM-input activation, stream, "
                 "KV-cache and recurrent-state formats).")


def operand_precision(weight: Precision | None, other: Precision) -> Precision:
    """The precision a matrix op computes at: the wider of its two operands.

    W8A8 FP8 computes at fp8; NVFP4 weights with NVFP4 activations at fp4; weight-only
    quantization (W4A16: int4 or MXFP4 weights, bf16 activations) at bf16, because the
    weights are widened to the activations' format before the multiply.
    """
    if weight is None:
        return other
    return weight if weight.bits_per_element >= other.bits_per_element else other
