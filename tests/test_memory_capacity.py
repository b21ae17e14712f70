"""Device memory capacities are the totals the runtime reports (CUDA's totalGlobalMem, the
total of torch.cuda.mem_get_info() that vLLM multiplies by gpu_memory_utilization; ROCm's
VRAM in GiB), not the datasheets' decimal figures; the vllm-v1-async profile sizes its KV
cache after the same profiling pass as vllm-v1; and ``roofkit serve``'s fit check takes that
pass's peak from the usable memory."""

from __future__ import annotations

import importlib

import pytest

import roofkit

MIB, GIB = 2**20, 2**30
H100 = 85_045_477_376        # B, deviceQuery 'Total amount of global memory' (thamada/nvidia-smi)

# the async profile's warm-up bound on a large device (8192 tokens, 1024 sequences), Llama 3
# 8B (hidden 4096, vocab 128256), 16-bit logits only: 8192 x 4096 x 2 + 1024 x 128256 x 2
ASYNC_PEAK_8B = 67_108_864 + 262_668_288                       # = 329,777,152 B


@pytest.mark.parametrize("device, total", [
    ("h100-sxm", H100),
    ("a100-80gb", 85_100_068_864),
    ("a100-40gb", 42_298_834_944),
    ("a100-80gb-pcie", 81049 * MIB),          # mixbench: totalGlobalMem / 1024 / 1024
    ("l40s", 47_803_596_800),
    ("l4", 23_570_219_008),
    ("rtx-4090", 25_386_352_640),
    ("rtx-5090", 33_677_180_928),
    ("h200", 143156 * MIB),                   # torch's total_memory=143156MB (150.11e9 B)
    ("b200", 182642 * MIB),                   # torch's total_memory=182642MB (191.51e9 B)
    ("mi300x", 192 * GIB),
    ("mi325x", 256 * GIB),
    ("mi355x", 288 * GIB),
])
def test_capacities_are_the_runtime_totals(registry, device, total):
    assert registry.device(device).memory.capacity == pytest.approx(total, rel=1e-12)


def test_the_runtime_totals_sit_where_the_datasheets_do_not(registry):
    """81106 MiB is 6.3 % above the datasheet's 80e9 B; ECC-enabled GDDR6 boards (L4, L40S)
    come out below their decimal figure, so the change is not a blanket GiB rename."""
    assert registry.device("h100-sxm").memory.capacity / 80e9 == pytest.approx(1.0631, abs=1e-4)
    assert registry.device("l40s").memory.capacity < 48e9
    assert registry.device("l4").memory.capacity < 24e9


def test_every_changed_capacity_cites_its_runtime_source(registry):
    for name, key in (("h100-sxm", "runtime"), ("h200", "runtime"), ("b200", "runtime"),
                      ("rtx-4090", "runtime"),
                      ("mi325x", "rocm_specs"), ("mi355x", "rocm_specs")):
        d = registry.device(name)
        assert d.provenance["memory.capacity"].startswith(f"{key}:"), name
        assert d.sources[key].startswith("https://"), name
        assert "datasheet" in d.provenance["memory.capacity"], name


def test_vllm_large_device_defaults_still_split_at_70_gib(registry):
    """vLLM's 70 GiB threshold (EngineArgs.get_batch_defaults): the H100's 79.2 GiB stays
    above it, the L40S's 44.5 GiB below."""
    spec = registry.spec("engines", "vllm-v1-async")
    assert spec.limits(registry.device("h100-sxm")) == (1024, 8192)
    assert spec.limits(registry.device("l40s")) == (256, 2048)


def test_the_async_profile_sizes_its_kv_cache_like_vllm_v1(registry):
    sync, ahead = registry.spec("engines", "vllm-v1"), registry.spec("engines", "vllm-v1-async")
    assert ahead.kv_sizing.profile_run and sync.kv_sizing.profile_run
    assert "determine_available_memory" in ahead.kv_sizing.where
    assert "35d5cda123ec28581759b6d34cde8052314fb1e6" in ahead.kv_sizing.source
    # the sort of the PyTorch-native sampler (ROCm) against the 16-bit logits alone (CUDA)
    assert sync.kv_sizing.sampler_logit_bytes == 16.0
    assert ahead.kv_sizing.sampler_logit_bytes == 2.0


def test_the_async_kv_pool_by_hand(registry):
    """Llama 3.1 8B on one H100, vllm-v1-async: 0.9 x 85,045,477,376 B less the weights and
    the 329,777,152 B bound of the profiling pass is the KV pool."""
    from roofkit.circuit import api as circuit
    from roofkit.load import requests
    from roofkit.load.fabric import fabric_of

    simulate = importlib.import_module("roofkit.load.simulate")
    w = registry.workload("llama-3.1-8b")
    d, fab = fabric_of(registry, "h100")
    st = requests.stream(requests=4, concurrency=None, rate=1.0, trace=None, input_len=128,
                         output_len=128, seed=0, think_time=None)
    weights = circuit.footprint(w, d, kv_cache_dtype="bf16", registry=registry, tp=1,
                                basis="calibrated").weights
    rep = simulate.build_replica(registry, w, d, engine="vllm-v1-async", tp=1, precision=None,
                                 kv_cache_dtype="bf16", basis="calibrated", stream=st,
                                 fabric=fab)
    assert rep.cfg.kv_capacity == pytest.approx(H100 * 0.9 - weights - ASYNC_PEAK_8B)
    assert any("profiling pass of 8192 tokens" in n and "0.33 GB" in n for n in rep.notes)


def test_serve_takes_the_profiling_peak_from_the_fit(registry):
    kw = dict(batch=64, input_len=128, output_len=128, registry=registry)
    plain = roofkit.serve("llama-3.1-8b", "h100", **kw)
    ahead = roofkit.serve("llama-3.1-8b", "h100", engine="vllm-v1-async", **kw)
    sync = roofkit.serve("llama-3.1-8b", "h100", engine="vllm-v1", **kw)
    assert plain.usable_memory == pytest.approx(H100 * 0.9)
    assert not any("fit check" in n for n in plain.notes)
    assert ahead.usable_memory == pytest.approx(H100 * 0.9 - ASYNC_PEAK_8B)
    assert any("fit check" in n and "0.33 GB" in n for n in ahead.notes)
    # vllm-v1 sorts the warm-up's logits: 8192 x 4096 x 2 + 1024 x 128256 x 16 B
    assert sync.usable_memory == pytest.approx(H100 * 0.9 - 2_168_455_168)
    # the largest batch follows the smaller usable memory
    per = plain.per_sequence(256)
    assert ahead.max_batch(256) == int((H100 * 0.9 - ASYNC_PEAK_8B - ahead.weights_per_device)
                                       // per)


def test_max_load_sizes_its_batch_from_the_same_usable_memory(registry):
    """Offline full load at 1024/1024 (the cache grows: 1536 tokens held on average)."""
    from roofkit.serving.estimate import max_load

    kw = dict(input_len=1024, output_len=1024, registry=registry)

    a = max_load("llama-3.1-8b", "h100", engine="vllm-v1-async", **kw)
    b = max_load("llama-3.1-8b", "h100", **kw)
    assert a.batch <= b.batch
    per = b.per_sequence(1024 + 512)
    assert a.batch == int((H100 * 0.9 - ASYNC_PEAK_8B - a.weights_per_device) // per)
    assert b.batch == int((H100 * 0.9 - b.weights_per_device) // per)


def test_a_bad_sampler_bound_is_refused(tmp_path):
    bad = tmp_path / "engines"
    bad.mkdir()
    (bad / "x.toml").write_text(
        'name = "x"\ndisplay_name = "X"\nversion = "1"\n[scheduler]\nsource = "https://a"\n'
        '[host]\n[kv_sizing]\nprofile_run = true\nsampler_logit_bytes = 0.0\n'
        'source = "https://b"\nwhere = "w"\n', encoding="utf-8")
    with pytest.raises(roofkit.SpecError, match=r"kv_sizing\.sampler_logit_bytes"):
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path])
