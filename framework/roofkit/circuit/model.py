"""A workload ready to cost: lowered through its template, formats resolved, every node's
memory evaluated once. Cached per registry (:meth:`roofkit.registry.Registry.memo`).

The static quantities of a node instance come from its op rule's ``[memory]`` table:
``params`` (elements stored), ``active_params`` (elements one token uses), ``kv_per_token``,
``kv_tokens`` (tokens kept at a context) and ``state_per_seq``. Weight bytes stored are
``params * w_bytes``; a node ``tied_to`` another stores nothing (the embedding counted once).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping

import attrs

from ..errors import SpecError, UnknownNameError
from ..registry import resolve as resolve_registry
from . import expr as _expr
from .formats import Formats, resolve_formats
from .ir import Circuit, Node
from .spec import COST_FIELDS, CircuitTemplate, ModeRule, OpRule
from .template import TemplateError, lower, lower_error, merged

RUNTIME = ("rows", "context", "seqs")


@attrs.frozen
class NodeMemory:
    """What one instance of a node holds and uses, and its static element sizes."""

    params: float
    active_params: float
    weight_bytes: float  # stored (0 when tied)
    kv_per_token: float
    state_per_seq: float
    env: Mapping[str, float]  # node dims and element sizes
    conv_state_per_seq: float = 0.0  # rolling conv windows, apart from the recurrent state


@attrs.frozen(eq=False)
class Model:
    """A lowered workload with its formats, rules and per-node memory."""

    workload: object
    template: CircuitTemplate
    circuit: Circuit
    formats: Formats
    rules: Mapping[str, OpRule]
    memory: Mapping[str, NodeMemory]
    kv_tokens: Mapping[str, object]  # node id -> compiled f(context) -> tokens kept
    kinds: Mapping[str, object] = attrs.field(factory=dict)  # op kinds by lowercased name
    settings_key: tuple = ()
    compiled: dict = attrs.field(factory=dict)  # (node id, mode) -> compiled functions

    def node_functions(self, node: Node, mode: str):
        """``(trees, scalar f, vector f)`` of ``node``'s cost fields in ``mode``, over rows,
        context and seqs; compiled once per model (every device and basis reuses them)."""
        key = (node.id, mode)
        hit = self.compiled.get(key)
        if hit is None:
            trees = node_trees(self.rules[node.op.lower()], mode, self.memory[node.id].env)
            hit = (trees, _expr.compile_function(RUNTIME, trees),
                   _expr.compile_function(RUNTIME, trees, vector=True))
            self.compiled[key] = hit
        return hit

    @property
    def nodes(self) -> tuple[Node, ...]:
        return self.circuit.nodes

    @property
    def tp(self) -> int:
        """The tensor-parallel devices this model is one shard of (1: a whole model)."""
        return self.circuit.tp


def _rules(registry) -> dict[str, OpRule]:
    cat = registry.catalogues.get("ops")
    return {} if cat is None else {k: cat[k] for k in cat}


def template_of(registry, workload) -> CircuitTemplate:
    """The merged circuit template of a template workload."""
    if workload.template is None:
        raise SpecError(f"workload {workload.name!r} has no circuit template (it is a generic "
                        "workload: declared params and FLOPs); circuits need `template`")
    cats = registry.catalogues.get("circuits")
    if cats is None:
        raise SpecError("no circuit templates are registered (specs/circuits/)")

    def make():
        try:
            return merged(cats[workload.template], {k: cats[k] for k in cats})
        except TemplateError as exc:
            raise SpecError(f"{exc} @ {cats.origin(workload.template)}:{exc.path}") from None
    return registry.memo(("circuit-template", workload.template.lower()), make)


def _let_trees(lets: Mapping, known: dict) -> dict:
    """Parse lets in order, each inlined with the earlier ones."""
    out = dict(known)
    for k, v in lets.items():
        out[k] = _expr.substitute(_expr.parse(v).body, out)
    return out


def mode_rule(rule: OpRule, mode: str) -> ModeRule:
    if mode == "prefill" and rule.prefill is not None:
        return rule.prefill
    return rule.decode


def node_trees(rule: OpRule, mode: str, env: Mapping[str, float]) -> list[ast.AST]:
    """The cost fields of ``rule`` in ``mode`` as trees over rows, context and seqs only."""
    try:
        return _node_trees(rule, mode, env)
    except _expr.ExprError as exc:  # a rule built in code, past the size bound
        raise SpecError(f"op rule {rule.name!r} {mode}: {exc}") from None


def _node_trees(rule: OpRule, mode: str, env: Mapping[str, float]) -> list[ast.AST]:
    m = mode_rule(rule, mode)
    bindings = _let_trees(rule.let, dict(env))
    bindings = _let_trees(m.let, bindings)
    out = []
    for f in COST_FIELDS:
        tree = _expr.substitute(_expr.parse(getattr(m, f)).body, bindings)
        extra = _expr.free_names(tree) - set(RUNTIME)
        if extra:
            raise SpecError(f"rule {rule.name!r} {mode}.{f} reads {', '.join(sorted(extra))}, "
                            "which the node does not give")
        out.append(tree)
    return out


def _static(rule: OpRule, field: str, env, node_id: str, workload: str = "") -> float:
    text = getattr(rule.memory, field)
    bindings = _let_trees(rule.let, dict(env)) if rule.let else env
    tree = _expr.substitute(_expr.parse(text).body, bindings)
    fn = _expr.compile_function((), [tree])
    where = f"{workload}: " if workload else ""
    try:
        v = fn()[0]
    except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
        raise SpecError(f"{where}node {node_id!r}: memory.{field} of op rule {rule.name!r} "
                        f"fails: {type(exc).__name__} ({exc}); check the workload's dims "
                        f"({_zero_dims(env)})") from None
    if isinstance(v, complex) or not math.isfinite(v):
        raise SpecError(f"{where}node {node_id!r}: memory.{field} of op rule {rule.name!r} "
                        f"is {v!r}; check the workload's dims ({_zero_dims(env)})")
    return float(v)


def _zero_dims(env) -> str:
    zero = sorted(k for k, v in env.items() if not isinstance(v, ast.AST) and v == 0)
    return f"node dims at 0: {', '.join(zero)}" if zero else "none is 0"


def element_sizes(formats: Formats, node: Node) -> dict[str, float]:
    """``w_bytes`` (the node's weight format), ``a_bytes`` (the stream: activations between
    kernels), ``g_bytes`` (a matrix op's activation operand, the ``activations`` format),
    ``kv_bytes``, ``state_bytes``."""
    w = formats.weight(node.role).bytes_per_element if node.format else 0.0
    return {"w_bytes": w,
            "a_bytes": formats.stream.bytes_per_element,
            "g_bytes": formats.activation.bytes_per_element,
            "kv_bytes": formats.kv.bytes_per_element,
            "state_bytes": formats.state.bytes_per_element}


def settings_key(precision, formats, kv_cache_dtype, ssm_h_dtype) -> tuple:
    p = getattr(precision, "name", precision)
    return (p, tuple(sorted((formats or {}).items())), kv_cache_dtype, ssm_h_dtype)


def build_model(workload, registry=None, *, precision=None, formats=None, kv_cache_dtype=None,
                ssm_h_dtype=None, tp: int = 1) -> Model:
    """Lower and prepare ``workload`` (a name, path or spec) for one of ``tp`` tensor-parallel
    devices (its per-device shard); cached per registry."""
    registry = resolve_registry(registry)
    w = registry.workload(workload)
    key = ("circuit-model", id(w), settings_key(precision, formats, kv_cache_dtype, ssm_h_dtype),
           tp)
    hit = registry._memo.get(key)
    if hit is not None and hit.workload is w:
        return hit
    model = _build(registry, w, precision, formats, kv_cache_dtype, ssm_h_dtype, tp)
    registry._memo[key] = model
    return model


def _build(registry, w, precision, formats, kv_cache_dtype, ssm_h_dtype, tp=1) -> Model:
    template = template_of(registry, w)
    kinds = dict(registry.op_kinds)
    rules = _rules(registry)
    roles = {n.role for n in template.nodes if n.role}
    fm = resolve_formats(registry, template, w, precision=precision, formats=formats,
                         kv_cache_dtype=kv_cache_dtype, ssm_h_dtype=ssm_h_dtype, roles=roles)
    unknown = sorted(set(w.formats) - roles - {"default", "activations", "kv", "state"})
    if unknown:
        raise SpecError(f"formats role(s) {', '.join(unknown)} are not roles of template "
                        f"{template.name!r} ({', '.join(sorted(roles))}) @ "
                        f"{_origin(registry, w)}:formats")
    try:
        circuit = lower(w, template, rules, kinds, fm, tp)
    except TemplateError as exc:
        if exc.path == "tp":  # the call's tp, not the spec, is at fault
            raise SpecError(f"{w.name}: {exc}") from None
        raise lower_error(exc, w, template, registry) from None
    memory, kv_tokens = {}, {}
    for n in circuit.nodes:
        rule = rules.get(n.op.lower())
        if rule is None:
            raise UnknownNameError("op-cost rule", n.op, rules,
                                   hint="Add specs/ops/<op>.toml (or a plugin spec dir).")
        env = {**n.dims, **element_sizes(fm, n)}
        params = _static(rule, "params", env, n.id, w.name)
        active = params if rule.memory.active_params is None else \
            _static(rule, "active_params", env, n.id, w.name)
        stored = 0.0 if n.tied_to else params * env["w_bytes"]
        kvpt = _static(rule, "kv_per_token", env, n.id, w.name)
        memory[n.id] = NodeMemory(
            params=0.0 if n.tied_to else params, active_params=0.0 if n.tied_to else active,
            weight_bytes=stored, kv_per_token=kvpt,
            state_per_seq=_static(rule, "state_per_seq", env, n.id, w.name), env=env,
            conv_state_per_seq=_static(rule, "conv_state_per_seq", env, n.id, w.name))
        if kvpt:
            bindings = _let_trees(rule.let, dict(env))
            tree = _expr.substitute(_expr.parse(rule.memory.kv_tokens).body, bindings)
            kv_tokens[n.id] = (_expr.compile_function(("context",), [tree]),
                               _expr.compile_function(("context",), [tree], vector=True))
    return Model(workload=w, template=template, circuit=circuit, formats=fm, rules=rules,
                 memory=memory, kv_tokens=kv_tokens, kinds=kinds,
                 settings_key=settings_key(precision, formats, kv_cache_dtype, ssm_h_dtype))


def _origin(registry, w):
    try:
        return registry.workloads.origin(w.name)
    except Exception:
        return f"<workload {w.name}>"


def rule_cost(registry, op: str, dims: Mapping[str, float], *, mode: str = "decode",
              rows=1.0, context=0.0, seqs=None, w_bytes=2.0, a_bytes=2.0, kv_bytes=2.0,
              state_bytes=4.0, g_bytes=None) -> dict[str, float]:
    """One node instance of ``op`` costed by its rule: {flops, weight_bytes, ..., params,
    kv_per_token, state_per_seq}. For tests, docs and plugin authors."""
    registry = resolve_registry(registry)
    rules = _rules(registry)
    rule = rules.get(op.lower())
    if rule is None:
        raise UnknownNameError("op-cost rule", op, rules)
    env = {**rule.defaults, **{k: float(v) for k, v in dims.items()}, "w_bytes": w_bytes,
           "a_bytes": a_bytes, "g_bytes": a_bytes if g_bytes is None else g_bytes,
           "kv_bytes": kv_bytes, "state_bytes": state_bytes}
    trees = node_trees(rule, mode, env)
    fn = _expr.compile_function(RUNTIME, trees)
    values = fn(rows, context, rows if seqs is None else seqs)
    out = dict(zip(COST_FIELDS, (float(v) for v in values), strict=True))
    for f in ("params", "kv_per_token", "state_per_seq", "conv_state_per_seq"):
        out[f] = _static(rule, f, env, op)
    return out
