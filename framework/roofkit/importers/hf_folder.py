"""Finding and reading a Hugging Face model folder, offline.

A model is named by a ``config.json`` path, a folder holding one, a config dict, or a hub id
(``Qwen/Qwen2.5-14B``) found in a local Hugging Face cache (``HF_HUB_CACHE``, else
``HF_HOME/hub``, else ``~/.cache/huggingface/hub``; ``models--Qwen--Qwen2.5-14B/snapshots/
<revision>/``). Nothing is downloaded. Beside ``config.json`` the folder may hold a ModelOpt
``hf_quant_config.json`` and safetensors weights: the stored parameter count is the sum of
the tensors' elements in the safetensors headers when the shards are present, else the
index's ``metadata.total_size`` bytes over the checkpoint dtype's element size.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import struct
from collections.abc import Mapping
from pathlib import Path

import attrs

from ..errors import Problem, SpecError
from ..files import MAX_BYTES, read_spec_bytes

#: bytes per element of a checkpoint's ``torch_dtype``
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


@attrs.frozen
class HFModel:
    """What a model folder says: its config and what lies beside it."""

    config: Mapping
    config_file: str
    quant: Mapping | None = None  # hf_quant_config.json
    quant_file: str | None = None
    stored_params: float | None = None
    stored_params_why: str = ""
    weights_file: str | None = None
    hub_id: str | None = None
    folder: str | None = None


def hub_cache_dirs() -> list[Path]:
    """The Hugging Face hub cache folders to look in, first match first."""
    env = os.environ
    if env.get("HF_HUB_CACHE"):
        return [Path(env["HF_HUB_CACHE"]).expanduser()]
    if env.get("HF_HOME"):
        return [Path(env["HF_HOME"]).expanduser() / "hub"]
    return [Path("~/.cache/huggingface/hub").expanduser()]


def is_hub_id(name: str) -> bool:
    return bool(_HUB_ID.match(name))


def find_cached(hub_id: str) -> Path | None:
    """The snapshot folder of ``hub_id`` in a local hub cache that holds its config.json:
    the revision ``refs/main`` names, else the newest snapshot."""
    try:
        return _find_cached(hub_id)
    except OSError:  # an unreadable cache folder holds nothing we can use
        return None


def _find_cached(hub_id: str) -> Path | None:
    org, name = hub_id.split("/")
    for cache in hub_cache_dirs():
        repo = cache / f"models--{org}--{name}"
        snaps = repo / "snapshots"
        if not snaps.is_dir():
            continue
        main = repo / "refs" / "main"
        if main.is_file():
            snap = snaps / main.read_text().strip()
            if (snap / "config.json").is_file():
                return snap
        found = sorted((s for s in snaps.iterdir() if (s / "config.json").is_file()),
                       key=lambda s: s.stat().st_mtime, reverse=True)
        if found:
            return found[0]
    return None


def is_hf_path(ref) -> bool:
    """Whether ``ref`` names a config.json (any ``*.json`` file) or a folder holding one."""
    if not isinstance(ref, str | Path):
        return False
    p = Path(ref).expanduser()
    if str(ref).endswith(".json"):
        return True
    try:
        return p.is_dir() and (p / "config.json").is_file()
    except OSError:  # a name too long, a loop: not a model folder (the lookup says why)
        return False


def _read_json(path: Path, what: str, limit: int = MAX_BYTES) -> dict:
    """A JSON object from a regular file of at most ``limit`` bytes (FIFOs, devices, loops
    and huge files are refused by :func:`~roofkit.files.read_spec_bytes`)."""
    if not path.exists() and not path.is_symlink():
        raise SpecError(Problem(str(path), None, f"{what} does not exist"))
    raw = read_spec_bytes(path, limit)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise SpecError(Problem(str(path), None, f"{what} is not readable JSON: {why}")) \
            from None
    if not isinstance(data, dict):
        raise SpecError(Problem(str(path), None, f"{what} must hold a JSON object"))
    return data


def _hub_id_of(folder: Path) -> str | None:
    """``org/name`` of a snapshot folder inside a hub cache."""
    parts = folder.resolve().parts
    for i, part in enumerate(parts):
        if part.startswith("models--") and i + 1 < len(parts) and parts[i + 1] == "snapshots":
            bits = part[len("models--"):].split("--", 1)
            if len(bits) == 2:
                return "/".join(bits)
    return None


def safetensors_elements(path: Path) -> int:
    """Elements of every tensor in one safetensors file, from its JSON header alone (a
    regular file only: a FIFO or a device under the name is refused, never read)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise SpecError(Problem(str(path), None, f"cannot read: {exc.strerror}")) from None
    if not stat.S_ISREG(st.st_mode):
        raise SpecError(Problem(str(path), None, "not a regular file (a FIFO, device or "
                                                  "folder): roofkit reads only regular files"))
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise SpecError(Problem(str(path), None, "not a safetensors file (no header)"))
        (n,) = struct.unpack("<Q", head)
        if n > 100_000_000:
            raise SpecError(Problem(str(path), None, "not a safetensors file (header size)"))
        try:
            header = json.loads(f.read(n))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise SpecError(Problem(str(path), None, f"unreadable safetensors header: {exc}")) \
                from None
    return sum(math.prod(t["shape"]) for k, t in header.items() if k != "__metadata__")


def _stored_params(folder: Path, config: Mapping, quantized: bool):
    """(params, why, file) from the safetensors beside the config, or (None, '', None)."""
    if quantized:
        return None, "", None  # packed and scale tensors are not parameters one to one
    index = folder / "model.safetensors.index.json"
    single = folder / "model.safetensors"
    if index.is_file():
        data = _read_json(index, "the safetensors index", limit=16 * MAX_BYTES)
        shards = sorted(set((data.get("weight_map") or {}).values()))
        if shards and all((folder / s).is_file() for s in shards):
            n = sum(safetensors_elements(folder / s) for s in shards)
            return float(n), (f"safetensors: the tensors of {len(shards)} shard(s) hold "
                              f"{n} elements"), str(index)
        total = (data.get("metadata") or {}).get("total_size")
        dtype = config.get("torch_dtype") or config.get("dtype")
        size = DTYPE_BYTES.get(str(dtype))
        if isinstance(total, int | float) and size:
            return total / size, (f"derived: safetensors index metadata.total_size {total:g} B "
                                  f"/ {size} B per {dtype} element"), str(index)
        return None, "", None
    if single.is_file():
        n = safetensors_elements(single)
        return float(n), f"safetensors: model.safetensors holds {n} elements", str(single)
    return None, "", None


#: the files beside config.json whose contents change the imported workload
SIDE_FILES = ("hf_quant_config.json", "model.safetensors.index.json", "model.safetensors")


def _locate(ref, hub: bool = True) -> tuple[Path, Path]:
    """(folder, config.json path) that ``ref`` names, without reading them."""
    try:
        return _locate_path(ref, hub)
    except OSError as exc:  # a name too long, a permission error: located, not a traceback
        raise SpecError(Problem(str(ref), None, f"cannot look at this path: "
                                f"{exc.strerror or exc}")) from None


def _locate_path(ref, hub: bool) -> tuple[Path, Path]:
    text = str(ref)
    p = Path(text).expanduser()
    if not p.exists() and hub and is_hub_id(text):
        snap = find_cached(text)
        if snap is None:
            raise SpecError(Problem(None, None, (
                f"{text!r} is not in the catalogue, not a path, and not in a local Hugging Face "
                f"cache ({', '.join(map(str, hub_cache_dirs()))}); roofkit does not download: "
                f"fetch it first (huggingface-cli download {text} config.json) or pass the "
                "folder or config.json path")))
        p = snap
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise SpecError(Problem(str(p), None, "this folder has no config.json; pass a "
                                    "Hugging Face model folder or its config.json"))
        return p, p / "config.json"
    return p.parent, p


def model_files_key(ref) -> tuple:
    """What identifies one version of a model's files: each file's absolute path, inode,
    size and modification time (a missing side file is part of the key too)."""
    folder, cfg = _locate(ref)

    def stamp(path: Path):
        where = os.path.abspath(path)
        try:
            st = os.stat(where)
        except OSError:
            return where, None
        return where, st.st_ino, st.st_size, st.st_mtime_ns

    return (stamp(cfg), *(stamp(folder / f) for f in SIDE_FILES))


def read_hf(ref, *, hub: bool = True) -> HFModel:
    """Read a model: a config dict, a config.json path, a folder, or (``hub``) a hub id in
    the local cache. SpecError naming the file when it cannot."""
    if isinstance(ref, Mapping):
        return HFModel(config=dict(ref), config_file="<config dict>")
    text = str(ref)
    folder, cfg_file = _locate(ref, hub)
    config = _read_json(cfg_file, "the model config")
    quant_file = folder / "hf_quant_config.json"
    quant = _read_json(quant_file, "hf_quant_config.json") if quant_file.is_file() else None
    quantized = quant is not None or config.get("quantization_config") is not None
    params, why, wfile = _stored_params(folder, config, quantized)
    return HFModel(config=config, config_file=str(cfg_file), quant=quant,
                   quant_file=str(quant_file) if quant is not None else None,
                   stored_params=params, stored_params_why=why, weights_file=wfile,
                   hub_id=_hub_id_of(folder) or (text if is_hub_id(text) and not
                                                 Path(text).exists() else None),
                   folder=str(folder))
