"""Hugging Face models as roofkit workloads: ``workload_from_hf(path_or_dict)``.

The importer builds the same table a hand-written workload TOML holds (name, template,
``[dims]`` with the config as their source, ``[formats]`` from the quantization config,
``[published]`` from the safetensors, ``[sources]``, ``[provenance]``, notes), then
structures and cross-checks it exactly as the loader does a file. ``roofkit import-hf``
writes that table out, so an imported model can be checked in and edited.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..circuit.formats import SPECIAL_ROLES
from ..errors import Problem, SpecError
from .hf_arch import TRANSFORMERS, map_config, model_type_of
from .hf_folder import HFModel, read_hf
from .hf_quant import quant_formats
from .toml_text import dumps

#: templates whose circuits have a routed-expert weight role
_EXPERT_TEMPLATES = ("moe", "mla-moe", "hybrid-gdn")
_HALF = {"float16": "fp16"}


def _key(text: str) -> str:
    key = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return key if key[:1].isalnum() else f"hf-{key}".rstrip("-")


def _name(model: HFModel, mt: str) -> tuple[str, str]:
    """(registry key, display name): the hub id's model part, else the folder's name, else
    the config's ``_name_or_path``, else ``hf-<model_type>``."""
    raw = model.config.get("_name_or_path")
    for cand in (model.hub_id, model.folder and Path(model.folder).name,
                 raw if isinstance(raw, str) else None):
        if cand and cand not in (".", "") and not re.fullmatch(r"[0-9a-f]{40}", cand):
            display = cand.rsplit("/", 1)[-1]
            return _key(display), display
    return f"hf-{_key(mt)}", f"Hugging Face {mt} model"


def _source_url(model: HFModel) -> str:
    if model.hub_id:
        return f"https://huggingface.co/{model.hub_id}/blob/main/config.json"
    if model.config_file.startswith("<"):
        return "a config dict passed to workload_from_hf"
    return str(Path(model.config_file).resolve())


def _template_roles(template: str, registry) -> set[str]:
    """The weight roles the nodes of circuit template ``template`` have."""
    from ..circuit.template import merged
    from ..registry import resolve

    circuits = resolve(registry).catalogues["circuits"]
    if template not in circuits:
        return set()
    return {n.role for n in merged(circuits[template], circuits).nodes if n.role}


def workload_table(ref, *, name: str | None = None, registry=None) -> dict:
    """The workload TOML table of a Hugging Face model (path, folder, hub id or dict)."""
    model = ref if isinstance(ref, HFModel) else read_hf(ref)
    mt = model_type_of(model.config, model.config_file)
    draft = map_config(model.config, model.config_file)
    key, display = _name(model, mt)
    if name is not None:
        key = name
    sources = {"config": _source_url(model), "transformers": f"{TRANSFORMERS}/{mt}",
               **draft.sources}
    provenance = {"dims": "config", **draft.provenance}
    formats: dict[str, str] = {}
    dtype = model.config.get("torch_dtype") or model.config.get("dtype")
    notes = list(draft.notes)
    qc, qfile, qkey = model.config.get("quantization_config"), model.config_file, \
        "quantization_config"
    if model.quant is not None:
        qc, qfile, qkey = model.quant, model.quant_file, "quantization"
        sources["quant_config"] = str(Path(model.quant_file).resolve())
    quant = quant_formats(qc, qfile, qkey)
    if quant.formats:
        if "experts" in quant.formats and draft.template not in _EXPERT_TEMPLATES:
            raise SpecError(Problem(qfile, qkey, (
                f"{quant.source} quantizes MoE experts, but model_type {mt!r} has none")))
        roles = _template_roles(draft.template, registry)
        for role, fmt in quant.formats.items():
            if role in SPECIAL_ROLES or role in roles or not roles:
                formats[role] = fmt
            else:  # kept in 16 bits by the config, but this model has no such weights
                notes.append(f"the quantization config keeps {role} weights in {fmt}; "
                             f"{mt} has none, so that entry is left out")
        src = "quant_config" if model.quant is not None else "config"
        provenance["formats"] = f"{src}: {quant.source.split(': ', 1)[-1]}"
        notes += quant.notes
    elif dtype in _HALF:
        formats["default"] = _HALF[dtype]
        provenance["formats"] = f"config: torch_dtype {dtype}"
    elif dtype == "float32":
        notes.append("the checkpoint is stored in float32; it is costed in bf16, as serving "
                     "engines load it (pass precision='fp32' to cost fp32)")
    table: dict = {"name": key, "display_name": display, "domain": "language",
                   "template": draft.template}
    if model.hub_id:
        table["aliases"] = [model.hub_id]
    table["dims"] = draft.dims
    if formats:
        table["formats"] = formats
    if model.stored_params is not None:
        table["published"] = {"params": model.stored_params}
        sources["safetensors"] = str(Path(model.weights_file).resolve())
        provenance["published.params"] = model.stored_params_why
    table["sources"] = sources
    table["provenance"] = provenance
    table["notes"] = " ".join(n if n.endswith(".") else f"{n}." for n in (
        f"Imported from a Hugging Face config.json (model_type {mt})", *notes))
    return table


def workload_from_hf(ref, *, name: str | None = None, registry=None):
    """A :class:`~roofkit.schema.workload.Workload` from a Hugging Face model: a config.json
    path, a model folder, a hub id in the local cache, or a config dict. It is structured and
    cross-checked against ``registry`` (the default one unless given) like a TOML file."""
    from ..loader import format_problems, problems_of
    from ..registry import resolve
    from ..spec_kinds import SPEC_KINDS

    reg = resolve(registry)
    model = ref if isinstance(ref, HFModel) else read_hf(ref)
    table = workload_table(model, name=name, registry=reg)
    kind = SPEC_KINDS["workloads"]
    obj, items = problems_of(table, kind.cls, reg.converter)
    if not items:
        items = kind.check(obj, {**reg._tables, **reg.catalogues})
    if items:
        problems = format_problems(model.config_file, items)
        raise SpecError(problems, title=f"{model.config_file}: the imported workload has "
                        f"{len(problems)} problem(s)")
    return obj


def workload_toml(ref, *, name: str | None = None, registry=None) -> str:
    """The workload TOML text of a Hugging Face model, ready to check in."""
    model = ref if isinstance(ref, HFModel) else read_hf(ref)
    table = workload_table(model, name=name, registry=registry)
    return dumps(table, header=(
        f"{table['display_name']}: imported by `roofkit import-hf` from\n"
        f"{model.config_file}. Dims come from the config (see [provenance]);\n"
        "parameters and FLOPs are derived by the circuit template, never typed."))



