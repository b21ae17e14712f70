"""Lowering a template workload through its circuit template into a :class:`Circuit`.

Dims resolve in order: the workload's ``[dims]``, the template's ``defaults`` for those it
leaves out, then ``derived``. Each main-section part is selected per layer index ``i`` when
``first <= i < last``, ``(i - offset) % every == 0`` and ``enabled != 0``; in each slot the
first matching part wins. A node of part ``P`` becomes one IR node ``P.id`` whose ``count``
is the number of layers running ``P``.
"""

from __future__ import annotations

import math

import attrs

from ..errors import SpecError
from . import expr as _expr
from .ir import Block, Circuit, Edge, Node
from .spec import CircuitTemplate, PartSpec


class TemplateError(ValueError):
    """A template cannot be merged or lowered; ``path`` is the key path at fault."""

    def __init__(self, message: str, path: str = "<top>"):
        self.path = path
        super().__init__(message)


def merged(template: CircuitTemplate, circuits) -> CircuitTemplate:
    """``template`` with its ``extends`` chain folded in (base first, child wins)."""
    chain = [template]
    seen = {template.name}
    while chain[-1].extends:
        base_name = chain[-1].extends
        base = circuits.get(base_name.lower()) if circuits else None
        if base is None:
            raise TemplateError(f"extends unknown template {base_name!r}; known: "
                                f"{', '.join(sorted(circuits or ()))}", "extends")
        if base.name in seen:
            raise TemplateError(f"templates extend each other in a cycle: "
                                f"{' -> '.join(t.name for t in chain)} -> {base.name}", "extends")
        seen.add(base.name)
        chain.append(base)
    if len(chain) == 1:
        return template
    out = chain[-1]
    for child in reversed(chain[:-1]):
        parts = list(out.parts)
        names = [p.name for p in parts]
        for p in child.parts:
            if p.name in names:
                parts[names.index(p.name)] = p
            else:
                parts.append(p)
                names.append(p.name)
        nodes = list(out.nodes)
        keys = [(n.part, n.id) for n in nodes]
        for n in child.nodes:
            if (n.part, n.id) in keys:
                nodes[keys.index((n.part, n.id))] = n
            else:
                nodes.append(n)
                keys.append((n.part, n.id))
        out = attrs.evolve(
            out, name=child.name, description=child.description or out.description,
            extends="", decoder=child.decoder,
            requires=tuple(dict.fromkeys((*out.requires, *child.requires))),
            defaults={**out.defaults, **child.defaults},
            derived={**out.derived, **child.derived}, formats={**out.formats, **child.formats},
            edges={**out.edges, **child.edges}, parts=tuple(parts), nodes=tuple(nodes),
            tp_divides=tuple(dict.fromkeys((*out.tp_divides, *child.tp_divides))),
            sources={**out.sources, **child.sources}, notes=child.notes or out.notes)
    return out


def _value(text, env, where: str) -> float:
    try:
        v = _expr.parse(text)(env)
    except KeyError as exc:
        raise TemplateError(f"{where}: needs {exc.args[0]!r}, which is not defined") from None
    except ZeroDivisionError:
        raise TemplateError(f"{where}: division by zero in {text!r}") from None
    except (OverflowError, ValueError) as exc:
        raise TemplateError(f"{where}: {text!r} fails: {exc}") from None
    v = float(v)
    if not math.isfinite(v):
        raise TemplateError(f"{where}: {text!r} is not finite")
    return v


def resolve_dims(template: CircuitTemplate, workload, tp: int = 1) -> dict[str, float]:
    """The workload's dims completed with the template's defaults and derived names, for one
    of ``tp`` tensor-parallel devices (``tp`` is a name every expression may read)."""
    if "tp" in workload.dims:
        raise TemplateError("`tp` is the tensor-parallel degree of a call, not a model dim; "
                            "remove it from [dims]", "dims.tp")
    env = {k: float(v) for k, v in workload.dims.items()}
    env["tp"] = float(tp)
    missing = [k for k in (*template.requires, "layers")
               if k not in env and k not in template.defaults]
    if missing:
        raise TemplateError(f"template {template.name!r} needs dims "
                            f"{', '.join(dict.fromkeys(missing))}", "dims")
    for k, v in template.defaults.items():
        if k not in env:
            env[k] = _value(v, env, f"defaults.{k}")
    for k, v in template.derived.items():
        if k in workload.dims:
            raise TemplateError(f"dim {k!r} is derived by template {template.name!r} "
                                f"({v}); remove it from [dims]", f"dims.{k}")
        env[k] = _value(v, env, f"derived.{k}")
    if tp > 1:
        check_tp(template, env, tp)
    return env


def reads_tp(template: CircuitTemplate) -> bool:
    """Whether any expression of the (merged) template reads ``tp``: its shard is described."""
    texts = [*template.defaults.values(), *template.derived.values()]
    for n in template.nodes:
        texts += [*n.dims.values(), n.when, n.count]
    for p in template.parts:
        texts += list(p.let.values())
    return any(isinstance(t, str) and "tp" in _expr.parse(t).names for t in texts)


def check_tp(template: CircuitTemplate, env, tp: int) -> None:
    """``tp > 1`` needs a template that describes its shard, and divides ``tp_divides``."""
    if not reads_tp(template):
        raise TemplateError(f"template {template.name!r} does not describe tensor "
                            f"parallelism (no expression reads `tp`), so tp={tp} is refused",
                            "tp")
    for name in template.tp_divides:
        v = env.get(name)
        if v is not None and v % tp:
            raise TemplateError(f"tp={tp} does not divide {name} = {v:g}: {template.name!r} "
                                f"splits {name} over the devices", "tp")


def _selects(part: PartSpec, env, i: int, cache: dict) -> bool:
    if part.name not in cache:
        cache[part.name] = tuple(_value(getattr(part, f), env, f"part {part.name}: {f}")
                                 for f in ("enabled", "every", "offset", "first", "last"))
    enabled, every, offset, first, last = cache[part.name]
    if not enabled or every <= 0 or not first <= i < last:
        return False
    return (i - offset) % every == 0


def _part_nodes(t: CircuitTemplate, part: PartSpec, by_name, depth=0):
    if depth > 8:
        raise TemplateError(f"part {part.name!r}: `like` chain too deep or cyclic", "parts")
    own = [n for n in t.nodes if n.part == part.name]
    if part.like:
        base = by_name.get(part.like)
        if base is None:
            raise TemplateError(f"part {part.name!r} is like unknown part {part.like!r}", "parts")
        inherited = _part_nodes(t, base, by_name, depth + 1)
        ids = {n.id for n in own}
        own = [n for n in inherited if n.id not in ids] + own
    return own


def lower(workload, template: CircuitTemplate, rules, kinds, formats, tp: int = 1) -> Circuit:
    """Lower ``workload`` through a merged ``template``, for one of ``tp`` devices.

    :param rules: op rules by lowercased op kind (for dim defaults).
    :param kinds: op kinds by lowercased name.
    :param formats: a :class:`roofkit.circuit.formats.Formats` (weight format per role,
        activation format).
    """
    env = resolve_dims(template, workload, tp)
    layers = int(env["layers"])
    by_name = {p.name: p for p in template.parts}
    main_parts = [p for p in template.parts if p.section == "main"]
    slots = list(dict.fromkeys(p.slot for p in main_parts))
    cache: dict = {}
    layer_parts: list[tuple[str, ...]] = []
    for i in range(layers):
        chosen = []
        for slot in slots:
            for p in main_parts:
                if p.slot == slot and _selects(p, env, i, cache):
                    chosen.append(p.name)
                    break
        layer_parts.append(tuple(chosen))
    part_count = {p.name: sum(p.name in lp for lp in layer_parts) for p in main_parts}
    for p in template.parts:
        if p.section == "draft":
            part_count[p.name] = int(_value(p.count, env, f"part {p.name}: count"))

    groups: dict[tuple[str, ...], list[int]] = {}
    for i, lp in enumerate(layer_parts):
        groups.setdefault(lp, []).append(i)
    blocks = tuple(Block(lp, len(ix), tuple(ix)) for lp, ix in groups.items())

    edges = {name: Edge(name, _value(v, env, f"edges.{name}"), formats.activation.name)
             for name, v in template.edges.items()}

    def make(spec, section, part_name, count, scope, node_id):
        where = f"node {node_id}"
        if not _value(spec.when, scope, f"{where}: when"):
            return None
        kind = kinds[spec.op.lower()]
        rule = rules.get(kind.name.lower())
        dims = dict(rule.defaults) if rule is not None else {}
        for k, v in spec.dims.items():
            dims[k] = _value(v, scope, f"{where}: dims.{k}")
        fmt = formats.weight(spec.role).name if kind.weight_bearing else ""
        return Node(id=node_id, op=kind.name, section=section, dims=dims, count=count,
                    part=part_name, role=spec.role, format=fmt,
                    tied_to=spec.tied_to, inputs=spec.inputs, outputs=spec.outputs)

    nodes: list[Node] = []
    order = {"embed": 0, "main": 1, "head": 2, "draft": 3}
    for spec in template.nodes:
        if spec.section in ("main",) or spec.part:
            continue
        count = int(_value(spec.count, env, f"node {spec.id}: count"))
        if count > 0:
            n = make(spec, spec.section, "", count, env, spec.id)
            if n is not None:
                nodes.append(n)
    for part in template.parts:
        count = part_count.get(part.name, 0)
        if count <= 0:
            continue
        scope = dict(env)
        for k, v in part.let.items():
            scope[k] = _value(v, env, f"part {part.name}: let.{k}")
        section = "main" if part.section == "main" else "draft"
        for spec in _part_nodes(template, part, by_name):
            n = make(spec, section, part.name, count, scope, f"{part.name}.{spec.id}")
            if n is not None:
                nodes.append(n)
    nodes.sort(key=lambda n: order[n.section])  # stable: file order within a section
    return Circuit(workload=workload.name, template=template.name, dims=env,
                   nodes=tuple(nodes), edges=edges, blocks=blocks, decoder=template.decoder,
                   activation_format=formats.activation.name,
                   settings={"activations": formats.activation.name,
                             "kv_cache_dtype": formats.kv.name,
                             "ssm_h_dtype": formats.state.name,
                             "default_format": formats.fallback.name})


def lower_error(exc: TemplateError, workload, template, registry) -> SpecError:
    """A lowering failure as a SpecError naming the workload file (or the template's)."""
    try:
        origin = registry.workloads.origin(workload.name)
    except Exception:
        origin = f"<workload {workload.name}>"
    return SpecError(f"{exc} (template {template.name!r}) @ {origin}:{exc.path}")
