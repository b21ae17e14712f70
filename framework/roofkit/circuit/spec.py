"""Spec classes of the two circuit catalogues: circuit templates and op-cost rules.

``specs/circuits/*.toml`` holds :class:`CircuitTemplate` (nodes with dims written as
expressions over a workload's dims, grouped into sections and per-layer parts);
``specs/ops/*.toml`` holds :class:`OpRule` (an op kind's FLOPs and bytes per mode, as
expressions over the node's dims, ``rows``, ``context``, ``seqs`` and element sizes).

Syntax and the expression whitelist are checked when a file is structured
(:meth:`problems`); names, op kinds and cross-references against the registry in
:func:`check_circuit` and :func:`check_op_rule`, run after the plugins registered.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import attrs

from ..schema.fields import nonnegative, numbers
from . import expr as _expr

#: A field holding an expression: a string such as ``"2 * rows * k * n"`` or a number.
#: Typed ``Any`` so the loader passes it through; :func:`_expr_problems` checks it.
Expression = Any

SECTIONS = ("embed", "main", "head", "draft")
#: Names every op rule may read besides its op kind's params.
RUNTIME_NAMES = ("rows", "context", "seqs")
SIZE_NAMES = ("w_bytes", "a_bytes", "g_bytes", "kv_bytes", "state_bytes")
#: The byte terms of a mode: memory traffic, each an expression ("0" when absent).
BYTE_FIELDS = ("weight_bytes", "act_bytes", "kv_read", "kv_write", "state_read", "state_write")
#: The cost fields of a mode, in the order a compiled node function returns them: FLOPs, the
#: six byte terms, the independent GEMMs the FLOPs split into (GEMM-size efficiency reads
#: ``flops / gemms``; 1 when absent), and a collective's link terms (bytes each device sends
#: over its link and the latency-bound steps; 0 when absent, see
#: :mod:`roofkit.circuit.collective`).
COST_FIELDS = ("flops", *BYTE_FIELDS, "gemms", "link_bytes", "link_steps")
MEMORY_FIELDS = ("params", "active_params", "kv_per_token", "kv_tokens", "state_per_seq",
                 "conv_state_per_seq")


#: a dim value a template fixes or a rule defaults: as large as a workload's dims
DIM_RANGE = nonnegative(1e15)


def _expr_problems(path: str, text) -> list[tuple[str, str]]:
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        return [(path, f"expected an expression string or a number, got {text!r}")]
    if isinstance(text, float) and not math.isfinite(text):
        return [(path, f"expected a finite number, got {text!r}")]
    if isinstance(text, int) and abs(text) > _expr.MAX_LITERAL:
        return [(path, f"number {len(str(abs(text)))} digits long is larger than "
                 f"{_expr.MAX_LITERAL:g}")]
    try:
        _expr.parse(text)
    except _expr.ExprError as exc:
        return [(path, f"refused expression {str(text)[:80]!r}: {exc}")]
    return []


# ---------------------------------------------------------------------------- templates
@attrs.frozen
class NodeSpec:
    """One node of a template: an op kind with dims as expressions over workload dims.

    Main-section nodes belong to a ``part`` (repeated on the layers the part selects); other
    sections repeat ``count`` times. ``when`` drops the node where it evaluates to 0;
    ``tied_to`` names a node whose weights this one shares (stored once); ``format`` pins
    the weight precision unless the workload or the call names the role.
    """

    id: str
    op: str
    section: Literal["embed", "main", "head", "draft"] = "main"
    part: str = ""
    dims: dict[str, Expression] = attrs.field(factory=dict)
    role: str = ""
    when: Expression = 1
    count: Expression = 1
    tied_to: str = ""
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()


@attrs.frozen
class PartSpec:
    """A per-layer alternative in a slot (``mixer``, ``ffn``...).

    For each layer index ``i`` in ``[first, last)`` with ``(i - offset) % every == 0`` and
    ``enabled`` nonzero, the first part of the slot (in file order) that matches is used.
    ``like`` copies another part's nodes; ``let`` overrides template names for them.
    A ``draft`` part is repeated ``count`` times in the draft section instead.
    """

    name: str
    slot: str = ""
    section: Literal["main", "draft"] = "main"
    like: str = ""
    let: dict[str, Expression] = attrs.field(factory=dict)
    every: Expression = 1
    offset: Expression = 0
    first: Expression = 0
    last: Expression = "layers"
    enabled: Expression = 1
    count: Expression = 1


@attrs.frozen
class CircuitTemplate:
    """A circuit template: how a workload's dims become nodes, sections and layers.

    ``requires`` lists workload dims without a default; ``defaults`` gives the others
    (numbers, or expressions over earlier names); ``derived`` computes names the workload
    cannot set. ``formats`` pins a role's precision (embedding at bf16...) unless the
    workload's ``[formats]`` or the call names that role. ``extends`` inherits a template:
    its tables merge, parts and nodes of the same name are replaced, new ones appended.

    Tensor parallelism: every expression may read ``tp``, the devices one replica is split
    over (1 without tensor parallelism); a template describes its per-device shard with it
    (``heads / tp`` query heads...) and adds its collectives as nodes. ``tp_divides`` lists
    the dims ``tp`` must divide. A template that never reads ``tp`` refuses ``tp > 1``.

    Workload dims: a workload may set the ``requires`` (it must), ``defaults`` and
    ``fixed`` names and ``layers``, nothing else (``roofkit check`` names the closest known
    dim). ``fixed`` maps a dim the template does not vary to its only value (the encoder
    always uses LayerNorm: ``norm = 1``); a workload may state it, at that value. Every dim
    is a whole number unless ``fractional`` lists it; the ``requires`` without a default and
    ``layers`` are counts of at least 1.
    """

    name: str
    description: str = ""
    extends: str = ""
    decoder: bool = True
    requires: tuple[str, ...] = ()
    defaults: dict[str, Expression] = attrs.field(factory=dict)
    derived: dict[str, Expression] = attrs.field(factory=dict)
    formats: dict[str, str] = attrs.field(factory=dict)
    edges: dict[str, Expression] = attrs.field(factory=dict)
    parts: tuple[PartSpec, ...] = ()
    nodes: tuple[NodeSpec, ...] = ()
    tp_divides: tuple[str, ...] = ()
    fixed: dict[str, float] = numbers(DIM_RANGE)
    fractional: tuple[str, ...] = ()
    sources: dict[str, str] = attrs.field(factory=dict)
    notes: str = ""

    def problems(self) -> list[tuple[str, str]]:
        out = []
        for k, v in self.fixed.items():
            if isinstance(v, bool) or not isinstance(v, int | float):
                out.append((f"fixed.{k}", f"a fixed dim is a number, got {v!r}"))
        for table in ("defaults", "derived", "edges"):
            for k, v in getattr(self, table).items():
                out += _expr_problems(f"{table}.{k}", v)
        for i, p in enumerate(self.parts):
            for f in ("every", "offset", "first", "last", "enabled", "count"):
                out += _expr_problems(f"parts[{i}].{f}", getattr(p, f))
            for k, v in p.let.items():
                out += _expr_problems(f"parts[{i}].let.{k}", v)
        seen = set()
        for i, n in enumerate(self.nodes):
            key = (n.part, n.id)
            if key in seen:
                out.append((f"nodes[{i}].id", f"node {n.id!r} is defined twice in part "
                            f"{n.part or n.section!r}"))
            seen.add(key)
            for k, v in n.dims.items():
                out += _expr_problems(f"nodes[{i}].dims.{k}", v)
            for f in ("when", "count"):
                out += _expr_problems(f"nodes[{i}].{f}", getattr(n, f))
            if n.section == "main" and not n.part:
                out.append((f"nodes[{i}].part", f"main-section node {n.id!r} needs a `part`"))
            if n.section != "main" and n.part:
                out.append((f"nodes[{i}].part", f"node {n.id!r} in section {n.section!r} "
                            "cannot belong to a part (parts are layers of the main section)"))
        return out


# ---------------------------------------------------------------------------- op rules
@attrs.frozen
class ModeRule:
    """FLOPs and bytes of one node instance in one mode, each an expression. ``compute``
    overrides the rule's (a recurrence runs on vector units in decode, matrix in prefill).
    ``gemms`` is how many independent GEMMs the FLOPs split into (routed experts: one per
    touched expert); ``link_bytes`` and ``link_steps`` are what a collective sends over the
    device-to-device link and its latency-bound steps."""

    let: dict[str, Expression] = attrs.field(factory=dict)
    compute: Literal["matrix", "vector"] | None = None
    flops: Expression = 0
    weight_bytes: Expression = 0
    act_bytes: Expression = 0
    kv_read: Expression = 0
    kv_write: Expression = 0
    state_read: Expression = 0
    state_write: Expression = 0
    gemms: Expression = 1
    link_bytes: Expression = 0
    link_steps: Expression = 0


@attrs.frozen
class MemoryRule:
    """What a node instance holds: parameters (elements), KV bytes per token and the tokens
    kept at a context (``kv_tokens``, a window caps it), recurrent state bytes per sequence.
    ``active_params`` is what one token uses (routed experts at top_k); default ``params``.
    ``conv_state_per_seq`` is a rolling input window a sequence keeps (a causal conv1d's
    last ``kernel - 1`` inputs): reported apart from the recurrent state, and left out of
    the fit unless asked for (the reference estimator does not count it)."""

    params: Expression = 0
    active_params: Expression | None = None
    kv_per_token: Expression = 0
    kv_tokens: Expression = "context"
    state_per_seq: Expression = 0
    conv_state_per_seq: Expression = 0


@attrs.frozen
class OpRule:
    """The cost rule of one op kind (``name``): per mode FLOPs and bytes, and its memory.

    ``compute = "matrix"`` runs on the matrix units at the slot of its operand formats;
    ``"vector"`` at the device's fp32 (vector) peak. A missing ``prefill`` uses ``decode``
    (with ``rows = T``, ``seqs = 1``, ``context = T/2``). ``defaults`` fill node dims a
    template leaves out.
    """

    name: str
    decode: ModeRule
    description: str = ""
    compute: Literal["matrix", "vector"] = "vector"
    defaults: dict[str, float] = numbers(DIM_RANGE)
    let: dict[str, Expression] = attrs.field(factory=dict)
    prefill: ModeRule | None = None
    memory: MemoryRule = MemoryRule()
    sources: dict[str, str] = attrs.field(factory=dict)
    notes: str = ""

    def problems(self) -> list[tuple[str, str]]:
        out = []
        for k, v in self.let.items():
            out += _expr_problems(f"let.{k}", v)
        for mode in ("decode", "prefill"):
            rule = getattr(self, mode)
            if rule is None:
                continue
            for k, v in rule.let.items():
                out += _expr_problems(f"{mode}.let.{k}", v)
            for f in COST_FIELDS:
                out += _expr_problems(f"{mode}.{f}", getattr(rule, f))
        for f in MEMORY_FIELDS:
            v = getattr(self.memory, f)
            if v is not None:
                out += _expr_problems(f"memory.{f}", v)
        return out or self.growth_problems()

    def growth_problems(self) -> list[tuple[str, str]]:
        """The first expression of each mode (and of the memory) whose tree, with the lets
        it reads inlined as a plan compiles them, passes the size bound of
        :func:`~roofkit.circuit.expr.too_big`; measured without building it."""
        out = []
        base: dict[str, tuple[int, int]] = {}
        bad = _grow(self.let, base, "let")
        if bad:
            return [bad]
        for mode in ("decode", "prefill"):
            rule = getattr(self, mode)
            if rule is None:
                continue
            names = dict(base)
            bad = _grow(rule.let, names, f"{mode}.let") or _grow(
                {f: getattr(rule, f) for f in COST_FIELDS}, dict(names), mode)
            if bad:
                out.append(bad)
        bad = _grow({f: getattr(self.memory, f) for f in MEMORY_FIELDS
                     if getattr(self.memory, f) is not None}, dict(base), "memory")
        if bad:
            out.append(bad)
        return out


def _grow(table: dict, names: dict, where: str) -> tuple[str, str] | None:
    """Measure each expression of ``table`` with the names before it inlined, adding each
    to ``names`` (a let is read by those after it); the first one past the bound."""
    for k, v in table.items():
        try:
            body = _expr.parse(v).body
        except _expr.ExprError:
            return None  # reported by the syntax check
        nodes, depth = _expr.shape(body, {n: names[n] for n in _expr.parse(v).names
                                          if n in names})
        why = _expr.too_big(nodes, depth)
        if why:
            return (f"{where}.{k}", f"{k}: {why}")
        names[k] = (nodes, depth)
    return None


# ---------------------------------------------------------------------------- checks
def _names(text) -> frozenset[str]:
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        return frozenset()
    try:
        return _expr.parse(text).names
    except _expr.ExprError:
        return frozenset()  # already reported by problems()


def _table(tables, name):
    t = tables.get(name)
    if t is None:
        return {}
    # plugin tables map key -> (plugin, obj); catalogues map key -> obj
    return {k: (v[1] if isinstance(v, tuple) else v) for k, v in t.items()}


def check_op_rule(rule: OpRule, tables) -> list[tuple[str, str]]:
    """Names in a rule: its op kind's params, rows/context/seqs, element sizes, lets."""
    from ..errors import closest

    kinds = _table(tables, "op_kinds")
    kind = kinds.get(rule.name.lower())
    if kind is None:
        near = closest(rule.name, [k.name for k in kinds.values()])
        hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
        return [("name", f"no op kind {rule.name!r} is registered{hint} (op kinds come from "
                 "plugins: roofkit_register_op_kinds)")]
    out = []
    static = set(kind.params) | set(SIZE_NAMES)
    for k in rule.defaults:
        if k not in kind.params:
            out.append((f"defaults.{k}", f"{k!r} is not a param of op kind {kind.name!r} "
                        f"({', '.join(kind.params)})"))
    known = static | set(RUNTIME_NAMES)
    for k, v in rule.let.items():
        bad = sorted(_names(v) - known)
        if bad:
            out.append((f"let.{k}", _unknown_msg(bad, known)))
        known.add(k)
    base = set(known)
    for mode in ("decode", "prefill"):
        r = getattr(rule, mode)
        if r is None:
            continue
        known = set(base)
        for k, v in r.let.items():
            bad = sorted(_names(v) - known)
            if bad:
                out.append((f"{mode}.let.{k}", _unknown_msg(bad, known)))
            known.add(k)
        for f in COST_FIELDS:
            bad = sorted(_names(getattr(r, f)) - known)
            if bad:
                out.append((f"{mode}.{f}", _unknown_msg(bad, known)))
    # memory: static names and lets that do not read rows/seqs; kv_tokens may read context
    static_lets = _static_lets(rule.let, static)
    for f in MEMORY_FIELDS:
        v = getattr(rule.memory, f)
        if v is None:
            continue
        allowed = static | static_lets | ({"context"} if f == "kv_tokens" else set())
        if f == "kv_tokens":
            allowed |= set(rule.let)
        bad = sorted(_names(v) - allowed)
        if bad:
            out.append((f"memory.{f}", _unknown_msg(bad, allowed) +
                        " (memory may not read rows or seqs)"))
    return out


def _static_lets(lets: dict, static: set[str]) -> set[str]:
    ok: set[str] = set()
    for k, v in lets.items():
        if _names(v) <= static | ok:
            ok.add(k)
    return ok


#: format keys that are not node roles: the fallback and the non-weight tensors
FORMAT_KEYS = ("default", "activations", "kv", "state")


def _unknown_role(role: str, roles) -> str:
    from ..errors import closest

    near = closest(role, roles)
    hint = f"did you mean {', '.join(map(repr, near))}? " if near else ""
    return f"{role!r} is not a role of the template's nodes; {hint}roles: {', '.join(roles)}"


def _unknown_msg(bad, known) -> str:
    from ..errors import closest

    parts = []
    for name in bad:
        near = closest(name, known)
        parts.append(f"{name!r}" + (f" (did you mean {', '.join(map(repr, near))}?)"
                                    if near else ""))
    return f"unknown name {', '.join(parts)}; known: {', '.join(sorted(known))}"


def check_circuit(template: CircuitTemplate, tables) -> list[tuple[str, str]]:
    """Op kinds exist and have rules; node dims are the op kind's params; names resolve."""
    from ..errors import closest
    from .template import TemplateError, merged

    circuits = _table(tables, "circuits")
    try:
        t = merged(template, circuits)
    except TemplateError as exc:
        return [(exc.path, str(exc))]
    kinds = _table(tables, "op_kinds")
    rules = _table(tables, "ops")
    precisions = _table(tables, "precisions")
    out = []
    known = set(t.requires) | {"layers", "tp"} | set(t.fixed)
    for k in t.fixed:
        if k in t.requires or k in t.defaults or k in t.derived or k in ("layers", "tp"):
            out.append((f"fixed.{k}", f"{k!r} is fixed and also required, defaulted or "
                        "derived; keep it in one place"))
    for table in ("defaults", "derived"):
        for k, v in getattr(t, table).items():
            if isinstance(v, str):
                bad = sorted(_names(v) - known)
                if bad:
                    out.append((f"{table}.{k}", _unknown_msg(bad, known)))
            known.add(k)
    for k, v in t.edges.items():
        if isinstance(v, str):
            bad = sorted(_names(v) - known)
            if bad:
                out.append((f"edges.{k}", _unknown_msg(bad, known)))
    for i, name in enumerate(t.tp_divides):
        if name not in known:
            out.append((f"tp_divides[{i}]", _unknown_msg([name], known)))
    settable = set(t.requires) | set(t.defaults) | set(t.fixed)
    for i, name in enumerate(t.fractional):
        if name not in settable:
            out.append((f"fractional[{i}]", _unknown_msg([name], settable) +
                        " (only dims a workload sets can be fractional)"))
    roles = sorted({n.role for n in t.nodes if n.role} | set(FORMAT_KEYS))
    for role, fmt in t.formats.items():
        if precisions and fmt.lower() not in precisions:
            out.append((f"formats.{role}", f"unknown precision {fmt!r}"))
        if role.lower() not in roles:
            out.append((f"formats.{role}", _unknown_role(role, roles)))
    part_names = {p.name for p in t.parts}
    for i, p in enumerate(t.parts):
        for f in ("every", "offset", "first", "last", "enabled", "count"):
            v = getattr(p, f)
            if isinstance(v, str):
                bad = sorted(_names(v) - known)
                if bad:
                    out.append((f"parts[{i}].{f}", _unknown_msg(bad, known)))
        for k, v in p.let.items():
            if isinstance(v, str):
                bad = sorted(_names(v) - known)
                if bad:
                    out.append((f"parts[{i}].let.{k}", _unknown_msg(bad, known)))
            if k not in known:
                out.append((f"parts[{i}].let.{k}", f"let overrides {k!r}, which the template "
                            "does not define (add it to [derived] or [defaults])"))
        if p.like and p.like not in part_names:
            out.append((f"parts[{i}].like", f"no part named {p.like!r}"))
        if p.section == "main" and not p.slot:
            out.append((f"parts[{i}].slot", f"main part {p.name!r} needs a `slot`"))
    for i, n in enumerate(t.nodes):
        where = f"nodes[{i}]"
        kind = kinds.get(n.op.lower())
        if kind is None:
            near = closest(n.op, [k.name for k in kinds.values()])
            hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
            out.append((f"{where}.op", f"node {n.id!r}: unknown op kind {n.op!r}{hint}"))
            continue
        if n.part and n.part not in part_names:
            out.append((f"{where}.part", f"node {n.id!r}: no part named {n.part!r}"))
        rule = rules.get(kind.name.lower()) if rules else None
        if rules and rule is None:
            out.append((f"{where}.op", f"node {n.id!r}: op kind {kind.name!r} has no cost rule "
                        "(add specs/ops/<name>.toml or a plugin spec dir)"))
        for k, v in n.dims.items():
            if k not in kind.params:
                near = closest(k, kind.params)
                hint = f" (did you mean {', '.join(map(repr, near))}?)" if near else ""
                out.append((f"{where}.dims.{k}", f"node {n.id!r}: {k!r} is not a param of op "
                            f"kind {kind.name!r}{hint}; params: {', '.join(kind.params)}"))
            elif isinstance(v, str):
                bad = sorted(_names(v) - known)
                if bad:
                    out.append((f"{where}.dims.{k}", _unknown_msg(bad, known)))
        missing = [p for p in kind.params if p not in n.dims
                   and (rule is None or p not in rule.defaults)]
        if missing and rules:
            out.append((f"{where}.dims", f"node {n.id!r}: op kind {kind.name!r} needs dims "
                        f"{', '.join(missing)} (its rule gives no default)"))
        for f in ("when", "count"):
            v = getattr(n, f)
            if isinstance(v, str):
                bad = sorted(_names(v) - known)
                if bad:
                    out.append((f"{where}.{f}", _unknown_msg(bad, known)))
        for e in (*n.inputs, *n.outputs):
            if e not in t.edges:
                out.append((f"{where}.inputs", f"node {n.id!r}: no edge named {e!r} in [edges]"))
        if kind.weight_bearing and not n.role:
            out.append((f"{where}.role", f"node {n.id!r}: op kind {kind.name!r} bears weights; "
                        "give it a `role` (attention, mlp, experts...) for its format"))
    return out
