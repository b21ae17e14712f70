"""Lowering a template workload through its circuit template into a :class:`Circuit`.

Dims resolve in order: the workload's ``[dims]``, the template's ``defaults`` for those it
leaves out, then ``derived``. Each main-section part is selected per layer index ``i`` when
``first <= i < last``, ``(i - offset) % every == 0`` and ``enabled != 0``; in each slot the
first matching part wins. A node of part ``P`` becomes one IR node ``P.id`` whose ``count``
is the number of layers running ``P``.

Before anything resolves, :func:`dim_problems` checks the workload's ``[dims]`` against the
template: names it does not know (with the closest known one), required dims it lacks,
fractional values of counted dims, counts below 1 where the template needs one, values
beyond :data:`MAX_DIM`. The same check runs when specs load (``roofkit check``).
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


class UndefinedNameError(TemplateError):
    """A template expression reads a name nothing defines: the template's own fault (its
    check reports it), not a workload's."""


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
            fixed={**out.fixed, **child.fixed},
            fractional=tuple(dict.fromkeys((*out.fractional, *child.fractional))),
            sources={**out.sources, **child.sources}, notes=child.notes or out.notes)
    return out


def _value(text, env, where: str) -> float:
    try:
        v = _expr.parse(text)(env)
    except KeyError as exc:
        raise UndefinedNameError(f"{where}: needs {exc.args[0]!r}, which is not defined") \
            from None
    except ZeroDivisionError:
        raise TemplateError(f"{where}: division by zero in {text!r}") from None
    except (OverflowError, ValueError) as exc:
        raise TemplateError(f"{where}: {text!r} fails: {exc}") from None
    v = float(v)
    if not math.isfinite(v):
        raise TemplateError(f"{where}: {text!r} is not finite")
    return v


#: The largest value a workload dim may take (products of a few dims stay finite floats).
MAX_DIM = 1e15


def settable_dims(template: CircuitTemplate) -> list[str]:
    """The dims a workload of ``template`` may set: layers, requires, defaults, fixed."""
    return list(dict.fromkeys(("layers", *template.requires, *template.defaults,
                               *template.fixed)))


def dim_problems(template: CircuitTemplate, dims) -> list[tuple[str, str]]:
    """What is wrong with a workload's ``[dims]`` for a (merged) ``template``, as (key path,
    message): unknown names (with the closest known), required dims left out, a fixed dim at
    another value, fractional values where the template counts, counts below 1."""
    from ..errors import closest

    out: list[tuple[str, str]] = []
    known = settable_dims(template)
    name = template.name
    for k, v in dims.items():
        if k == "tp":
            out.append(("dims.tp", "`tp` is the tensor-parallel degree of a call, not a model "
                        "dim; remove it from [dims]"))
            continue
        if k in template.derived:
            out.append((f"dims.{k}", f"dim {k!r} is derived by template {name!r} "
                        f"({template.derived[k]}); remove it from [dims]"))
            continue
        if k not in known:
            near = closest(k, known)
            hint = f"did you mean {', '.join(map(repr, near))}? " if near else ""
            out.append((f"dims.{k}", f"unknown dim {k!r} for template {name!r}; {hint}"
                        f"known: {', '.join(sorted(known))}"))
            continue
        try:
            x = float(v)
        except (TypeError, ValueError):
            out.append((f"dims.{k}", f"{k} = {v!r} is not a number"))
            continue
        if not math.isfinite(x):
            out.append((f"dims.{k}", f"{k} = {v!r} is not finite"))
            continue
        if k in template.fixed and x != float(template.fixed[k]):
            out.append((f"dims.{k}", f"template {name!r} fixes {k} = {template.fixed[k]:g}; "
                        f"got {v:g} (remove it, or use a template that varies it)"))
            continue
        if k not in template.fractional and x != math.floor(x):
            out.append((f"dims.{k}", f"{k} = {v!r} is not a whole number; template {name!r} "
                        f"counts it (round it, e.g. {k} = {round(x)})"))
            continue
        if x < 0:
            out.append((f"dims.{k}", f"{k} = {v:g} is negative"))
        elif x > MAX_DIM:
            out.append((f"dims.{k}", f"{k} = {v:g} is larger than {MAX_DIM:g}; no model dim "
                        "is that large (a typo?)"))
        elif x < 1 and (k == "layers" or (k in template.requires and
                                          k not in template.defaults)):
            out.append((f"dims.{k}", f"{k} = {v:g}: template {name!r} needs at least 1 "
                        "(a count the circuit divides by or repeats)"))
    missing = [k for k in ("layers", *template.requires)
               if k not in dims and k not in template.defaults and k not in template.fixed]
    if missing:
        out.append(("dims", f"template {name!r} requires dims "
                    f"{', '.join(dict.fromkeys(missing))}, which the workload lacks"))
    return out


def resolve_dims(template: CircuitTemplate, workload, tp: int = 1) -> dict[str, float]:
    """The workload's dims completed with the template's defaults and derived names, for one
    of ``tp`` tensor-parallel devices (``tp`` is a name every expression may read)."""
    bad = dim_problems(template, workload.dims)
    if bad:
        path, msg = bad[0]
        more = f" (and {len(bad) - 1} more problem(s); `roofkit check` lists them)" \
            if len(bad) > 1 else ""
        raise TemplateError(msg + more, path)
    env = {k: float(v) for k, v in template.fixed.items()}
    env.update((k, float(v)) for k, v in workload.dims.items())
    env["tp"] = float(tp)
    for k, v in template.defaults.items():
        if k not in env:
            env[k] = _value(v, env, f"defaults.{k}")
    for k, v in template.derived.items():
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


def _part_nodes(t: CircuitTemplate, part: PartSpec, by_name, depth=0, of_part=None):
    if depth > 8:
        raise TemplateError(f"part {part.name!r}: `like` chain too deep or cyclic", "parts")
    if of_part is None:
        of_part = {}
        for n in t.nodes:
            of_part.setdefault(n.part, []).append(n)
    own = list(of_part.get(part.name, ()))
    if part.like:
        base = by_name.get(part.like)
        if base is None:
            raise TemplateError(f"part {part.name!r} is like unknown part {part.like!r}", "parts")
        inherited = _part_nodes(t, base, by_name, depth + 1, of_part)
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
    by_slot = [[p for p in main_parts if p.slot == slot] for slot in slots]
    for p in main_parts:
        _selects(p, env, 0, cache)  # evaluate each part's selector once
    layer_parts: list[tuple[str, ...]] = []
    part_count = dict.fromkeys((p.name for p in main_parts), 0)
    for i in range(layers):
        chosen = []
        for parts in by_slot:
            for p in parts:
                enabled, every, offset, first, last = cache[p.name]
                if enabled and every > 0 and first <= i < last and (i - offset) % every == 0:
                    chosen.append(p.name)
                    part_count[p.name] += 1
                    break
        layer_parts.append(tuple(chosen))
    for p in template.parts:
        if p.section == "draft":
            part_count[p.name] = int(_value(p.count, env, f"part {p.name}: count"))

    groups: dict[tuple[str, ...], list[int]] = {}
    for i, lp in enumerate(layer_parts):
        groups.setdefault(lp, []).append(i)
    blocks = tuple(Block(lp, len(ix), tuple(ix)) for lp, ix in groups.items())

    edges = {name: Edge(name, _value(v, env, f"edges.{name}"), formats.stream.name)
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
    of_part: dict[str, list] = {}
    for spec in template.nodes:
        of_part.setdefault(spec.part, []).append(spec)
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
        for spec in _part_nodes(template, part, by_name, 0, of_part):
            n = make(spec, section, part.name, count, scope, f"{part.name}.{spec.id}")
            if n is not None:
                nodes.append(n)
    nodes.sort(key=lambda n: order[n.section])  # stable: file order within a section
    return Circuit(workload=workload.name, template=template.name, dims=env,
                   nodes=tuple(nodes), edges=edges, blocks=blocks, decoder=template.decoder,
                   activation_format=formats.activation.name,
                   settings={"activations": formats.activation.name,
                             "kv_cache_dtype": formats.kv.name,
                             "ssm_h_dtype": formats.state_label,
                             "default_format": formats.fallback.name})


def lower_error(exc: TemplateError, workload, template, registry) -> SpecError:
    """A lowering failure as a SpecError naming the workload file (or the template's)."""
    try:
        origin = registry.workloads.origin(workload.name)
    except Exception:
        origin = f"<workload {workload.name}>"
    return SpecError(f"{exc} (template {template.name!r}) @ {origin}:{exc.path}")
