"""Engine profiles: a serving engine's scheduler defaults, CUDA-graph batch sizes and per-step
host overhead, as data (``specs/engines/*.toml``).

The load simulator (:mod:`roofkit.load`) reads a profile for what the engine does between
model steps: how many sequences and tokens it batches, whether a long prompt is chunked and
whether prefill chunks share a step with decode rows, when the KV cache refuses or preempts
a request, which decode batch sizes replay a captured CUDA graph (one launch) and which
launch every kernel, and the engine's own host time per step. Every default names the file
and place it was read from; the host time is a measured table whose batch range the
simulator reports a run beyond.

``[[kernels]]`` lists the kernels the engine runs for its GEMMs and its attention, per
version, weight format and device: which compute slot a kernel's math uses and at what
fraction of that slot's peak, what fraction of the memory bandwidth its traffic reaches,
whether decode attention re-reads the KV cache once per query head, and the batch range it
was measured at. The circuit costs the nodes a kernel covers with it
(:mod:`roofkit.circuit.kernels`).
"""

from __future__ import annotations

import re
from typing import Literal

import attrs

from .common import check_key
from .fields import (
    MAX_COUNT,
    Range,
    count,
    counts,
    fraction,
    number,
    numbers,
    positive,
    quantities,
    quantity,
)

Policy = Literal["prefill-first", "decode-first"]
Admission = Literal["grow", "reserve", "peak"]

#: what each scheduling policy does when prompts wait and sequences decode
POLICIES = {
    "prefill-first": "waiting prompts are prefilled before the running sequences decode (the "
                     "decode rows join the step only when mixed batches are on)",
    "decode-first": "every running sequence decodes each step; waiting prompts fill the "
                    "token budget left over (vLLM's chunked-prefill scheduler)",
}


@attrs.frozen
class Cited:
    """Where a group of defaults was read."""

    source: str = ""
    where: str = ""
    notes: str = ""


@attrs.frozen
class LargeDevice:
    """Defaults an engine switches to on devices with at least ``min_memory`` of memory
    (vLLM: 70 GiB and not an A100), except the devices listed."""

    min_memory: float = quantity("bytes")
    max_num_seqs: int = count()
    max_num_batched_tokens: int = count(maximum=100 * MAX_COUNT)
    except_devices: list[str] = attrs.field(factory=list)


@attrs.frozen
class RequestPool:
    """An engine that sizes its request pool from its KV pool (SGLang): with ``K`` KV tokens
    and a model context of ``L`` tokens, ``min(max(int(K / L * per_context), smallest),
    largest)`` request slots, and at most ``int(K * kv_fraction)`` sequences running."""

    per_context: float = number(positive(1e9), default=512.0)
    smallest: int = count(default=2048)
    largest: int = count(default=4096)
    kv_fraction: float = fraction(default=0.5)

    def seqs(self, kv_tokens: float, context: float) -> int:
        pool = min(max(int(kv_tokens / context * self.per_context), self.smallest),
                   self.largest)
        return max(1, min(int(kv_tokens * self.kv_fraction), pool))


@attrs.frozen
class SchedulerDefaults(Cited):
    """The scheduler's defaults: sequences and tokens per step, chunking, policy, KV paging."""

    max_num_seqs: int = count(default=256)
    max_num_batched_tokens: int = count(default=8192, maximum=100 * MAX_COUNT)
    chunked_prefill: bool = True
    mixed_batches: bool = True  # prefill chunks and decode rows share one step
    policy: Policy = "decode-first"
    block_size: int = count(default=16, maximum=4096, doc="tokens per KV block")
    admission: Admission = "grow"
    preemption: Literal["recompute"] = "recompute"
    large_device: LargeDevice | None = None
    request_pool: RequestPool | None = None  # max_num_seqs from the KV pool instead


@attrs.frozen
class MemoryDefaults(Cited):
    """The share of each device's memory the engine takes for its weights and KV cache, by
    tensor-parallel size: ``static_fraction`` maps the smallest TP size of a band (``"1"``,
    ``"4"``, ...) to its fraction; the band with the largest key not above the TP size
    applies (SGLang's ``mem_fraction_static``). Empty: the device spec's usable fraction."""

    static_fraction: dict[str, float] = numbers(Range(0.0, 1.0, low_open=True),
                                                doc="fraction of each device's memory, by TP band")

    def fraction(self, tp: int) -> float | None:
        keys = sorted(int(k) for k in self.static_fraction)
        below = [k for k in keys if k <= tp]
        if not below:
            return None
        return float(self.static_fraction[str(below[-1])])


@attrs.frozen
class CudaGraphs(Cited):
    """Decode batch sizes captured as CUDA graphs: a decode-only step pads up to the next
    captured size and replays it with one launch; beyond the largest it launches every
    kernel. Empty: no graphs."""

    batch_sizes: list[int] = counts()


@attrs.frozen
class HostOverhead(Cited):
    """The engine's own host time per step (scheduling, input preparation, sampling, output
    processing), measured at several batch sizes (``by_batch``), or read from an engine
    profile of the host calibration (``calibration = "vllm-v0"``). ``overlap``: the engine
    prepares the next step while the device runs this one (step = max(device, host))."""

    by_batch: dict[str, float] = quantities("time")
    calibration: str = ""
    overlap: bool = False


@attrs.frozen
class Frontend(Cited):
    """The serving process in front of the engine (an OpenAI API server), one serial process
    per engine replica: each request costs it ``per_request + per_prompt_token x prompt
    tokens`` before the engine sees the request (parsing, chat template, tokenization,
    handing it over), and each step costs it ``per_token x sequences that emitted a token``
    before their tokens reach the clients (output processing, incremental detokenization,
    one streamed chunk each). A zero everywhere (the default) charges nothing."""

    per_request: float = quantity("time", default=0.0, nonnegative=True,
                                  doc="admission time of one request")
    per_prompt_token: float = quantity("time", default=0.0, nonnegative=True,
                                       doc="tokenization time per prompt token")
    per_token: float = quantity("time", default=0.0, nonnegative=True,
                                doc="time per streamed token of one request")

    @property
    def active(self) -> bool:
        return self.per_request > 0 or self.per_prompt_token > 0 or self.per_token > 0


KernelOp = Literal["gemm", "attention"]
KvReads = Literal["per_kv_head", "per_query_head"]
MODES = ("decode", "prefill")


@attrs.frozen
class KernelProfile(Cited):
    """One kernel of an engine and the nodes it covers (every listed condition holds; an
    empty list is any). The first matching entry of ``[[kernels]]`` wins.

    ``op``: ``gemm`` covers the weight matmuls, ``attention`` the attention over the KV
    cache. ``formats``: the weight formats (gemm) or KV-cache formats (attention) it serves.
    ``devices``: device keys, vendors (``nvidia``) or classes (``nvidia workstation``).
    ``since`` / ``before``: the engine versions it ships in (``since <= v < before``).
    ``query_heads_per_kv`` / ``head_dims``: the attention shapes it accepts. ``slot``: the
    compute slot its math runs on (empty: the slot the operand formats select);
    ``compute_efficiency`` and ``memory_efficiency``: the fractions of that slot's peak and
    of the memory bandwidth it reaches (1: the roofline's). ``kv_reads``:
    ``per_query_head`` when each query head's thread block reads its KV head's cache
    (masked multi-head attention with grouped KV heads). ``batch_range``: the smallest and
    largest GEMM rows (tokens of one step) its figures were measured at."""

    name: str = ""
    op: KernelOp = "gemm"
    modes: list[str] = attrs.field(factory=lambda: list(MODES))
    formats: list[str] = attrs.field(factory=list)
    devices: list[str] = attrs.field(factory=list)
    since: str = ""
    before: str = ""
    query_heads_per_kv: list[int] = counts()
    head_dims: list[int] = counts()
    slot: str = ""
    compute_efficiency: float = fraction(default=1.0)
    memory_efficiency: float = fraction(default=1.0)
    kv_reads: KvReads = "per_kv_head"
    batch_range: list[int] = counts()

    @property
    def measured(self) -> bool:
        """Whether the profile carries a measured number (an efficiency below 1), not only
        which kernel runs."""
        return self.compute_efficiency != 1.0 or self.memory_efficiency != 1.0


def version_key(version: str) -> tuple[int, ...]:
    """``"0.6.1"`` -> ``(0, 6, 1)``: the leading digits of each dotted part, up to the first
    part without any (``"v0.9.0rc1"`` -> ``(0, 9, 0)``; a build number ``"b3166"`` ->
    ``(3166,)``)."""
    out = []
    for part in version.strip().lstrip("vVb").split("."):
        m = re.match(r"\d+", part)
        if m is None:
            break
        out.append(int(m[0]))
    return tuple(out)


def _kernel_problems(i: int, k: KernelProfile) -> list[tuple[str, str]]:
    at = f"kernels[{i}]"
    out = []
    if not k.name:
        out.append((f"{at}.name", "name the kernel (e.g. \"masked-mha\", \"mmq\")"))
    if not k.source:
        out.append((f"{at}.source", "say where the kernel and its figures were read"))
    for m in k.modes:
        if m not in MODES:
            out.append((f"{at}.modes", f"a mode is decode or prefill, got {m!r}"))
    for key in ("since", "before"):
        v = getattr(k, key)
        if v and not version_key(v):
            out.append((f"{at}.{key}", f"a version such as \"0.7\" or \"0.6.1\", got {v!r}"))
    if k.since and k.before and version_key(k.since) >= version_key(k.before):
        out.append((f"{at}.before", f"before ({k.before}) must be a later version than since "
                    f"({k.since})"))
    r = k.batch_range
    if r and (len(r) != 2 or r[0] > r[1]):
        out.append((f"{at}.batch_range", "give [smallest, largest] measured GEMM rows"))
    if k.op == "gemm" and (k.kv_reads != "per_kv_head" or k.query_heads_per_kv or
                           k.head_dims):
        out.append((f"{at}.op", "kv_reads, query_heads_per_kv and head_dims describe an "
                    "attention kernel: set op = \"attention\""))
    if k.measured and not k.where:
        out.append((f"{at}.where", "say where in the source its efficiency was read or how it "
                    "was derived"))
    return out


@attrs.frozen
class KvSizing(Cited):
    """How the engine sizes its KV cache. ``profile_run``: it runs a profiling forward pass
    of ``max_num_batched_tokens`` tokens (and a sampler warm-up of ``min(tokens,
    max_num_seqs)`` requests) before allocating the cache, and gives the cache its memory
    share less the weights and that pass's peak (vLLM V1); the load simulator then subtracts
    a lower bound of the peak (:func:`roofkit.load.simulate.profile_peak`).
    ``sampler_logit_bytes``: the bytes an entry of the warm-up's ``[requests, vocab]`` logits
    that the bound counts: 16 where the sampler sorts them (float32 logits, their sorted copy
    and its int64 indices: vLLM's PyTorch-native top-k/top-p), 2 where only the 16-bit logits
    the model returns are certain to live (a sampler that does not sort, such as FlashInfer's
    on CUDA)."""

    profile_run: bool = False
    sampler_logit_bytes: float = number(positive(64.0), default=16.0,
                                        doc="bytes a logit entry of the sampler warm-up holds")


@attrs.frozen
class EngineSpec:
    """A serving engine profile."""

    name: str = attrs.field(validator=check_key)
    display_name: str
    version: str
    scheduler: SchedulerDefaults
    host: HostOverhead
    cuda_graphs: CudaGraphs = attrs.field(factory=CudaGraphs)
    aliases: list[str] = attrs.field(factory=list)
    description: str = ""
    sources: dict[str, str] = attrs.field(factory=dict)
    kernels: list[KernelProfile] = attrs.field(factory=list)
    kv_sizing: KvSizing = attrs.field(factory=KvSizing)
    memory: MemoryDefaults = attrs.field(factory=MemoryDefaults)
    frontend: Frontend = attrs.field(factory=Frontend)

    def limits(self, device) -> tuple[int, int]:
        """(max_num_seqs, max_num_batched_tokens) the engine picks on ``device``."""
        s = self.scheduler
        big = s.large_device
        if big is not None and device.memory.capacity >= big.min_memory and \
                device.name not in big.except_devices:
            return big.max_num_seqs, big.max_num_batched_tokens
        return s.max_num_seqs, s.max_num_batched_tokens

    def problems(self) -> list[tuple[str, str]]:
        out = []
        s = self.scheduler
        for f in ("max_num_seqs", "max_num_batched_tokens", "block_size"):
            if getattr(s, f) < 1:
                out.append((f"scheduler.{f}", f"{f} must be at least 1, got {getattr(s, f)}"))
        if not s.source:
            out.append(("scheduler.source", "say where the scheduler defaults were read"))
        sizes = self.cuda_graphs.batch_sizes
        if sizes and (sorted(set(sizes)) != list(sizes) or sizes[0] < 1):
            out.append(("cuda_graphs.batch_sizes", "captured batch sizes must be increasing "
                        "whole numbers >= 1"))
        if sizes and not self.cuda_graphs.source:
            out.append(("cuda_graphs.source", "say where the captured batch sizes were read"))
        m = self.memory
        for k, v in m.static_fraction.items():
            if not k.isdigit() or int(k) < 1:
                out.append((f"memory.static_fraction.{k}", "a key is the smallest TP size of its "
                            "band, a whole number >= 1 (\"1\", \"4\", \"8\")"))
            elif isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v <= 1:
                out.append((f"memory.static_fraction.{k}", f"a fraction of the device memory "
                            f"in (0, 1], got {v!r}"))
        if m.static_fraction and "1" not in m.static_fraction:
            out.append(("memory.static_fraction", "give the band of TP 1 (key \"1\") so every "
                        "TP size has a fraction"))
        if m.static_fraction and not m.source:
            out.append(("memory.source", "say where the memory fractions were read"))
        h = self.host
        if h.by_batch and h.calibration:
            out.append(("host", "give either by_batch or calibration, not both"))
        for b in h.by_batch:
            if not b.isdigit() or int(b) < 1:
                out.append((f"host.by_batch.{b}", "a batch size key is a whole number >= 1"))
        if (h.by_batch or h.calibration) and not h.source:
            out.append(("host.source", "say where the host times were measured"))
        if self.kv_sizing.profile_run and not (self.kv_sizing.source and self.kv_sizing.where):
            out.append(("kv_sizing.source", "profile_run = true needs its source and where: "
                        "the engine code that sizes the KV cache after a profiling pass"))
        if not 0 < self.kv_sizing.sampler_logit_bytes <= 64:
            out.append(("kv_sizing.sampler_logit_bytes", "the bytes a logit entry of the sampler "
                        "warm-up holds, in (0, 64]: 16 for a sorting sampler (float32 logits, "
                        f"sorted copy, int64 indices), got {self.kv_sizing.sampler_logit_bytes}"))
        if self.frontend.active and not (self.frontend.source and self.frontend.where):
            out.append(("frontend.source", "say where the frontend times were measured or "
                        "derived (source and where)"))
        if version_key(self.version) == ():
            out.append(("version", f"a version such as \"0.6\", got {self.version!r}"))
        for i, k in enumerate(self.kernels):
            out += _kernel_problems(i, k)
        return out


def check(spec: EngineSpec, tables) -> list[tuple[str, str]]:
    """Cross-check against the registry: a named host calibration profile exists."""
    out = []
    cal = tables.get("calibration")
    name = spec.host.calibration
    if name and cal is not None:
        hosts = [c for c in cal.values() if getattr(c, "device", None) in (None, "")]
        if hosts and not any(name in c.engines for c in hosts):
            known = sorted({k for c in hosts for k in c.engines})
            out.append(("host.calibration", f"no engine profile {name!r} in the host "
                        f"calibration; known: {', '.join(known)}"))
    precisions = tables.get("precisions")
    for i, k in enumerate(spec.kernels):
        for f in k.formats:
            if precisions is not None and f.lower() not in precisions:
                out.append((f"kernels[{i}].formats", f"unknown format {f!r}; name a "
                            "registered precision (roofkit precisions)"))
    return out
