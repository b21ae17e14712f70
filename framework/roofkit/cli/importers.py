"""``roofkit import-hf PATH [-o FILE]``: a Hugging Face model as a workload TOML.

PATH is a config.json, a model folder, or a hub id in the local Hugging Face cache. The
TOML goes to FILE (or stdout); it is checked as the loader checks a file before it is
written, and a line on stderr gives the derived parameter count.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import common


def register(sub) -> None:
    p = sub.add_parser(
        "import-hf", help="write the workload TOML of a Hugging Face config.json or folder",
        description="Map a Hugging Face config.json (and its quantization config and "
                    "safetensors index) onto a circuit template and write the workload TOML. "
                    "Nothing is downloaded: a hub id resolves only through a local Hugging "
                    "Face cache.")
    p.add_argument("path", metavar="PATH",
                   help="config.json, model folder, or hub id in the local HF cache")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    p.add_argument("--name", metavar="KEY", help="the workload's registry key (default: the "
                   "model's name, lowercased)")
    p.set_defaults(func=cmd_import_hf)


def cmd_import_hf(args) -> int:
    from ..circuit.stats import workload_stats
    from ..importers import read_hf, workload_from_hf, workload_toml

    reg = common.registry(args)
    model = read_hf(args.path)
    workload = workload_from_hf(model, name=args.name, registry=reg)
    text = workload_toml(model, name=args.name, registry=reg)
    stats = workload_stats(workload, reg)
    # a name or alias the catalogue already answers to: the file says it replaces that spec
    # (without it, the file on a spec path is refused as a collision)
    taken = sorted({reg.workloads.resolve(n) for n in (workload.name, *workload.aliases)
                    if n in reg.workloads})
    if taken:
        value = f'"{taken[0]}"' if len(taken) == 1 else "[" + ", ".join(
            f'"{t}"' for t in taken) + "]"
        text = (f"# on a spec path this file replaces the catalogue's {', '.join(taken)}\n"
                f"overrides = {value}\n" + text)
    where = "stdout"
    if args.output:
        out = Path(args.output)
        try:
            if out.is_dir():
                raise IsADirectoryError(21, "a folder, not a file")
            blocker = next((q for q in out.parents if q.exists()), None)
            if blocker is not None and not blocker.is_dir():
                raise NotADirectoryError(20, f"{str(blocker)!r} is a file, not a folder")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            from ..errors import ArgumentError

            raise ArgumentError(f"cannot write the workload to {str(out)!r}: "
                                f"{exc.strerror or exc}; give -o a file path such as "
                                "my-model.toml") from None
        where = str(out)
    else:
        sys.stdout.write(text)
    published = workload.published.params
    pub = f", {published / 1e9:.4g} B stored" if published else ""
    print(f"roofkit: {workload.name} (template {workload.template}): "
          f"{stats.params / 1e9:.4g} B parameters derived{pub} -> {where}", file=sys.stderr)
    return 0
