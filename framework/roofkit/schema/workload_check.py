"""Cross-checks of workload specs against the registry (templates, formats, dims)."""

from __future__ import annotations


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
            # the dims against the template, lowered once: unknown, missing, fractional or
            # zero counts, a rule that would divide by zero (tp is the call's, not checked)
            from ..circuit.validate import workload_problems

            out += workload_problems(workload, tables)
    return out
