"""Validating a template workload against its circuit template, once, when specs load.

``roofkit check`` (and every registry build) runs :func:`workload_problems` on each template
workload: its ``[dims]`` against the merged template (unknown names with the closest known
one, required dims left out, fractional or zero counts: :func:`~.template.dim_problems`),
then one lowering at ``tp = 1`` and every node's op rule evaluated at one row, one token
of context and one sequence, so that a dim which makes a rule divide by zero or overflow
is reported with the workload's file and key instead of failing at run time. Whether
``tp`` divides the dims is a question of the call (``tp=`` of an estimate), not of the
spec.
"""

from __future__ import annotations

import math

from . import expr as _expr
from .spec import COST_FIELDS, MEMORY_FIELDS, _table
from .template import TemplateError, UndefinedNameError, dim_problems, lower, merged

#: element sizes and run-time names the check evaluates a rule at
_PROBE = {"w_bytes": 2.0, "a_bytes": 2.0, "g_bytes": 2.0, "kv_bytes": 2.0, "state_bytes": 4.0,
          "rows": 1.0, "context": 1.0, "seqs": 1.0}


class _Fmt:
    name = "bf16"


class _ProbeFormats:
    """What :func:`~.template.lower` reads of the resolved formats, for a check."""

    activation = stream = kv = state = fallback = _Fmt()
    state_label = "fp32"

    def weight(self, role):
        return _Fmt()


_LAST: list = [None, None]  # (the tables of the last call, their circuits, kinds, rules)


def _tables(tables):
    """The circuits, op kinds and op rules of ``tables``, built once per load (every
    workload of one registry build is checked against the same tables)."""
    if _LAST[0] is not tables:
        _LAST[0] = tables
        _LAST[1] = (_table(tables, "circuits"), _table(tables, "op_kinds"),
                    _table(tables, "ops"))
    return _LAST[1]


def workload_problems(workload, tables) -> list[tuple[str, str]]:
    """(key path, message) for every problem of ``workload``'s dims under its template.

    A template that cannot be merged, or whose own check fails, is left to that check.
    """
    circuits, kinds, rules = _tables(tables)
    base = circuits.get(str(workload.template).lower())
    if base is None:
        return []  # an unknown template is reported by the caller
    try:
        template = merged(base, circuits)
    except TemplateError:
        return []  # the template's own check reports it
    out = dim_problems(template, workload.dims)
    if out:
        return out
    try:
        circuit = lower(workload, template, rules, kinds, _ProbeFormats(), 1)
    except UndefinedNameError:
        return []  # the template reads a name nothing defines: its own check reports it
    except TemplateError as exc:
        return [("dims", f"lowering through template {template.name!r} fails at its "
                 f"{exc.path}: {exc}")]
    except (KeyError, AttributeError):
        return []  # an unknown op kind: the template's own check reports it
    zero = sorted(k for k, v in workload.dims.items() if v == 0)
    hint = f" (dims at 0: {', '.join(zero)})" if zero else ""
    before = len(out)
    for n in circuit.nodes:
        rule = rules.get(n.op.lower())
        if rule is None:
            continue
        bad = _rule_problem(rule, {**n.dims, **_PROBE})
        if bad:
            field, why = bad
            out.append(("dims", f"node {n.id!r}: op rule {rule.name!r} {field} {why} with "
                        f"this workload's dims{hint}; fix the dims it reads "
                        f"({', '.join(f'{k} = {v:g}' for k, v in sorted(n.dims.items()))})"))
    if len(out) == before:
        out += [(k, m) for k, m, bad in _params_checks(workload, circuit, rules) if bad]
    return out


#: how far the derived parameter count may stray from ``[published] params``: past the first
#: ``check`` warns, past the second the spec is refused (the dims are then likely wrong)
PARAMS_WARN, PARAMS_ERROR = 0.02, 0.10


def _node_params(rule, env) -> float | None:
    """``memory.params`` of one node (its lets evaluated first); None when it fails."""
    env = dict(env)
    try:
        for k, text in rule.let.items():
            env[k] = _expr.parse(text)(env)
        v = _expr.parse(rule.memory.params)(env)
    except (ArithmeticError, ValueError, TypeError, KeyError):
        return None
    return None if isinstance(v, complex) or not math.isfinite(v) else float(v)


def computed_params(circuit, rules) -> float | None:
    """Parameters stored by a lowered circuit: every node's ``memory.params`` times its
    count, a tied node (the head sharing the embedding) and the draft section left out."""
    total = 0.0
    for n in circuit.nodes:
        rule = rules.get(n.op.lower())
        if rule is None:
            return None
        if n.tied_to or n.section == "draft":
            continue
        v = _node_params(rule, {**n.dims, **_PROBE})
        if v is None:
            return None
        total += v * n.count
    return total


def _params_checks(workload, circuit, rules) -> list[tuple[str, str, bool]]:
    """(key, message, is an error) when the derived parameter count strays from the
    published one by more than :data:`PARAMS_WARN`; an error past :data:`PARAMS_ERROR`."""
    published = workload.published.params
    if not published:
        return []
    computed = computed_params(circuit, rules)
    if computed is None:
        return []
    dev = computed / published - 1.0
    if abs(dev) <= PARAMS_WARN:
        return []
    bad = abs(dev) > PARAMS_ERROR
    limit = PARAMS_ERROR if bad else PARAMS_WARN
    return [("published.params", (
        f"the dims give {computed / 1e9:.4g}B parameters, {dev:+.1%} from [published] params "
        f"{published / 1e9:.4g}B (over the {limit:.0%} "
        f"{'limit' if bad else 'warning threshold'}); check the dims against the model's "
        "config, or the published figure"), bad)]


def workload_warnings(workload, tables) -> list[tuple[str, str]]:
    """``check``'s warnings for a template workload: a derived parameter count more than
    :data:`PARAMS_WARN` (and at most :data:`PARAMS_ERROR`) from the published one."""
    circuits, kinds, rules = _tables(tables)
    base = circuits.get(str(workload.template).lower())
    if base is None:
        return []
    try:
        template = merged(base, circuits)
        if dim_problems(template, workload.dims):
            return []
        circuit = lower(workload, template, rules, kinds, _ProbeFormats(), 1)
    except (TemplateError, KeyError, AttributeError):
        return []
    return [(k, m) for k, m, bad in _params_checks(workload, circuit, rules) if not bad]


def _risky(text) -> bool:
    """Whether an expression can fail on finite dims: it divides or raises to a power (the
    dims are finite, whole and at most 1e15, so sums, products, min, max and ceil cannot)."""
    return isinstance(text, str) and ("/" in text or "**" in text)


def _signed(text) -> bool:
    """Whether an expression can go negative on nonnegative dims: it subtracts or negates
    (sums, products, min, max, ceil and powers of nonnegative numbers cannot)."""
    return (isinstance(text, str) and "-" in text) or (isinstance(text, int | float) and text < 0)


def _rule_problem(rule, env) -> tuple[str, str] | None:
    """(field, why) of the first field of ``rule`` that fails, is not a finite number, or
    (a cost or memory field) is negative.

    Every ``let`` is evaluated (later fields read them); of the memory and cost fields only
    those that divide, raise to a power or subtract, the only ones finite nonnegative dims
    can make fail or go negative.
    """
    env = dict(env)

    def cost(field, text):
        why = value(field, text)
        if why is None and env.get(field, 0) < 0:
            return f"is negative ({env[field]:g}): a cost or size is >= 0"
        return why

    def value(field, text):
        try:
            v = _expr.parse(text)(env)
        except ZeroDivisionError:
            return "divides by zero"
        except (OverflowError, ValueError, TypeError) as exc:
            return f"fails ({type(exc).__name__}: {exc})"
        except KeyError:
            return None  # a name the rule reads but the node lacks: the rule's own check
        if isinstance(v, complex) or not math.isfinite(v):
            return f"is {v!r}"
        env[field] = v
        return None

    for k, text in rule.let.items():
        why = value(k, text)
        if why:
            return f"let.{k}", why
    for f in MEMORY_FIELDS:
        text = getattr(rule.memory, f)
        if _risky(text) or _signed(text):
            why = cost(f"memory.{f}", text)
            if why:
                return f"memory.{f}", why
    base = dict(env)
    for mode in ("decode", "prefill"):
        m = getattr(rule, mode)
        if m is None:
            continue
        env.clear()
        env.update(base)
        for k, text in m.let.items():
            why = value(k, text)
            if why:
                return f"{mode}.let.{k}", why
        for f in COST_FIELDS:
            text = getattr(m, f)
            if _risky(text) or _signed(text):
                why = cost(f"{mode}.{f}", text)
                if why:
                    return f"{mode}.{f}", why
    return None
