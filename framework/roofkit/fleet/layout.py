"""A training layout: parallel sizes, micro-batching, recomputation, ZeRO stage, adapters and
precision, validated once against the model and the device count.

``devices = tp * pp * cp * dp``; EP is carved out of the data-parallel group (``ep`` divides
``dp``); ``vpp`` virtual stages per pipeline rank (interleaved 1F1B).
"""

from __future__ import annotations

import math

import attrs

from .. import bounds
from ..errors import SpecError
from .elementwise import KERNELS
from .step import ADAPTER_SETS, RECOMPUTE

ATTENTION = ("flash", "unfused")
PRECISIONS = ("bf16", "fp16", "fp8")  # fp16 runs the bf16 path on the fp16 slot


class LayoutError(SpecError):
    """A layout the model or the cluster cannot run; the message lists every reason."""


@attrs.frozen
class Layout:
    tp: int = 1
    pp: int = 1
    vpp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    micro_batch: int = 1
    global_batch: int = 1
    seq_len: int = 2048
    recompute: str = "none"
    zero: int = 0
    lora: int = 0  # adapter rank; 0: full training
    qlora: bool = False
    precision: str = "bf16"
    sequence_parallel: bool = True
    attention: str = "flash"  # flash | unfused (scores materialised, pre-2022 engines)
    dropout: bool = False  # attention and hidden dropout (GPT-2/GPT-3-era recipes)
    dp_overlap: bool = True  # gradient sync overlapped with the backward (bucketed)
    capacity_factor: float = 1.0
    collective_algorithm: str | None = None
    kernels: str = "fused"  # fused (Megatron, NeMo) | eager (HF Transformers, PyTorch eager)
    lora_targets: str = "attention"  # attention | all (every linear of the layer)
    lora_dropout: bool = False  # PEFT's dropout on each adapter's input
    uneven_stages: bool = False  # pp need not divide the layers (embedding, head as layers)
    pp_scatter: bool = True  # stage sends 1 / tp per rank (False: whole tensor, DeepSpeed)
    fp32_accumulation: bool = False  # gradients summed into fp32 per micro-batch (BF16_Optimizer)

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

    @property
    def micro_batches(self) -> int:
        return self.global_batch // (self.micro_batch * self.dp)

    def to_dict(self) -> dict:
        return attrs.asdict(self)


#: the largest value of each layout count: a parallel degree is a number of devices, a
#: sequence a number of tokens, a batch a number of sequences (:mod:`roofkit.bounds`)
LAYOUT_BOUNDS = {**dict.fromkeys(("tp", "pp", "vpp", "dp", "cp", "ep"), bounds.MAX_DEVICES),
                 "micro_batch": bounds.MAX_BATCH, "global_batch": bounds.MAX_BATCH,
                 "seq_len": bounds.MAX_TOKENS}


def layout_problems(layout: Layout, arch, devices: int | None = None) -> list[str]:
    """Every reason ``layout`` cannot run ``arch`` (empty: it can)."""
    out = []
    lo = layout
    for name in ("tp", "pp", "vpp", "dp", "cp", "ep", "micro_batch", "global_batch",
                 "seq_len"):
        v = getattr(lo, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            out.append(f"{name} must be an integer >= 1, got {v!r}")
        elif v > LAYOUT_BOUNDS[name]:
            out.append(f"{name} must be {bounds.describe(name, LAYOUT_BOUNDS[name])}, got {v}")
    if out:
        return out
    if lo.recompute not in RECOMPUTE:
        out.append(f"recompute must be one of {', '.join(RECOMPUTE)}, got {lo.recompute!r}")
    if lo.zero not in (0, 1, 2, 3):
        out.append(f"zero must be 0, 1, 2 or 3, got {lo.zero!r}")
    if lo.precision not in PRECISIONS:
        out.append(f"precision must be one of {', '.join(PRECISIONS)}, got {lo.precision!r}")
    if lo.attention not in ATTENTION:
        out.append(f"attention must be one of {', '.join(ATTENTION)}, got {lo.attention!r}")
    if lo.kernels not in KERNELS:
        out.append(f"kernels must be one of {', '.join(KERNELS)}, got {lo.kernels!r}")
    if lo.lora_targets not in ADAPTER_SETS:
        out.append(f"lora_targets must be one of {', '.join(ADAPTER_SETS)}, got "
                   f"{lo.lora_targets!r}")
    if lo.lora < 0:
        out.append(f"the LoRA rank must be positive, got {lo.lora}")
    elif lo.lora > arch.hidden:
        out.append(f"the LoRA rank {lo.lora} exceeds hidden {arch.hidden:g}: an adapter's rank "
                   "is at most the smaller side of the matrix it adapts")
    if lo.qlora and lo.lora <= 0:
        out.append("QLoRA needs an adapter rank (--qlora RANK)")
    if not 1.0 <= lo.capacity_factor < math.inf:
        out.append(f"capacity_factor must be a finite number at least 1, got "
                   f"{lo.capacity_factor}")
    if devices is not None and lo.devices != devices:
        out.append(f"tp * pp * cp * dp = {lo.tp} * {lo.pp} * {lo.cp} * {lo.dp} = "
                   f"{lo.devices}, not the {devices} devices asked for")
    if arch.heads % lo.tp:
        out.append(f"tp {lo.tp} does not divide the {arch.heads} attention heads")
    elif arch.kv_heads % lo.tp and lo.tp % arch.kv_heads:
        out.append(f"tp {lo.tp} and the {arch.kv_heads} KV heads: one must divide the other")
    if lo.uneven_stages:
        if lo.vpp > 1:
            out.append("uneven stages need vpp = 1 (interleaved chunks must be equal)")
        if lo.pp > arch.layers:
            out.append(f"pp {lo.pp} exceeds the {arch.layers} layers")
    elif arch.layers % (lo.pp * lo.vpp):
        out.append(f"pp * vpp = {lo.pp * lo.vpp} does not divide the {arch.layers} layers "
                   "(uneven_stages lets pp leave a remainder)")
    if lo.vpp > 1 and lo.pp == 1:
        out.append("vpp > 1 (interleaved stages) needs pp > 1")
    if lo.ep > 1 and not arch.experts:
        out.append(f"ep {lo.ep} on {arch.name}, which has no experts")
    elif arch.experts and arch.experts % lo.ep:
        out.append(f"ep {lo.ep} does not divide the {arch.experts} experts")
    if lo.dp % lo.ep:
        out.append(f"ep {lo.ep} must divide dp {lo.dp} (experts are sharded across "
                   "data-parallel ranks)")
    if lo.seq_len % (2 * lo.cp) and lo.cp > 1:
        out.append(f"seq_len {lo.seq_len} must be a multiple of 2 * cp = {2 * lo.cp} "
                   "(causal load balancing of ring attention)")
    if lo.global_batch % (lo.micro_batch * lo.dp):
        out.append(f"global_batch {lo.global_batch} is not a multiple of micro_batch * dp = "
                   f"{lo.micro_batch * lo.dp}")
    elif lo.vpp > 1 and lo.micro_batches % lo.pp:
        out.append(f"interleaved 1F1B needs micro-batches ({lo.micro_batches}) to be a "
                   f"multiple of pp ({lo.pp})")
    return out


def check_layout(layout: Layout, arch, devices: int | None = None) -> Layout:
    problems = layout_problems(layout, arch, devices)
    if problems:
        raise LayoutError(f"invalid layout for {arch.name}: " + "; ".join(problems))
    return layout


def describe_placement(inner: dict, stride: dict, sizes: dict, domain: int,
                       tier_names: tuple[str, str]) -> dict:
    """Where each group landed: members per scale-up domain, domains spanned, the tier."""
    out = {}
    for g, size in sizes.items():
        if size <= 1:
            continue
        members = int(inner[g])
        spans = int(size // members)
        where = (f"inside one scale-up domain ({tier_names[0]})" if spans == 1 else
                 f"across {spans} scale-up domains over {tier_names[1]}, {members} per domain")
        out[g] = {"size": int(size), "stride": int(stride[g]), "per_domain": members,
                  "domains": spans, "where": where}
    return out
