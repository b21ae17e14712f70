"""Cross-checks of workload specs against the registry (templates, formats, dims)."""

from __future__ import annotations


def _role_problems(workload, circuits) -> list[tuple[str, str]]:
    """The ``[formats]`` keys are roles of the template's nodes (or default, activations,
    kv, state): a misspelled role would leave its nodes at the default precision."""
    from ..circuit.spec import FORMAT_KEYS, _table, _unknown_role
    from ..circuit.template import TemplateError, merged

    try:
        template = merged(circuits[workload.template], _table({"c": circuits}, "c"))
    except (TemplateError, KeyError):
        return []  # the template's own check reports it
    roles = sorted({n.role for n in template.nodes if n.role} | set(FORMAT_KEYS))
    return [(f"formats.{role}", _unknown_role(role, roles))
            for role in workload.formats if role.lower() not in roles]


def check(workload, tables) -> list[tuple[str, str]]:
    out = []
    precisions = tables.get("precisions", {})
    for role, fmt in workload.formats.items():
        if precisions and fmt.lower() not in precisions:
            out.append((f"formats.{role}", f"unknown precision {fmt!r}; known: "
                        f"{', '.join(sorted({p.name for _, p in precisions.values()}))}"))
    circuits = tables.get("circuits")
    if workload.template is not None and circuits is not None:
        if workload.template not in circuits:
            out.append(("template", f"unknown circuit template {workload.template!r}; known: "
                        f"{', '.join(sorted(circuits))}"))
        else:
            out += _role_problems(workload, circuits)
            # the dims against the template, lowered once: unknown, missing, fractional or
            # zero counts, a rule that would divide by zero (tp is the call's, not checked)
            from ..circuit.validate import workload_problems

            out += workload_problems(workload, tables)
    return out
