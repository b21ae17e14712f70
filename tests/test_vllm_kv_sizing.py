"""vLLM V1 sizes its KV cache after a profiling pass (``[kv_sizing] profile_run``): the load
simulator takes a lower bound of that pass's peak from the memory share, and the MI300X
holds 192 GiB."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import roofkit
from roofkit.load.simulate import profile_peak

GIB = 2**30


def test_the_mi300x_holds_192_gib(registry):
    assert registry.device("mi300x").memory.capacity == pytest.approx(192 * GIB)


@pytest.mark.parametrize("tokens, seqs, expected", [
    # Llama 3.1 70B (hidden 8192, vocab 128256), AMD's 131072-token budget:
    # forward 2 x 131072 x 8192 x 2 B = 4.295 GB; sampler 131072 x 8192 x 2 B +
    # 1500 x 128256 x 16 B = 2.147 + 3.078 = 5.226 GB, the larger
    (131072, 1500, 5.225627648e9),
    # 3200 sequences: 2.147 + 3200 x 128256 x 16 B = 2.147 + 6.567 = 8.714 GB
    (131072, 3200, 8.714190848e9),
    # the large-device defaults, 8192 tokens and 1024 sequences: 0.134 + 2.101 GB
    (8192, 1024, 2.235564032e9),
    # 500 requests at 131072 tokens: sampler 2.147 + 1.026 < forward 4.295 GB
    (131072, 500, 4.294967296e9),
])
def test_the_peak_lower_bound_by_hand(registry, tokens, seqs, expected):
    assert profile_peak(registry.workload("llama-3.1-70b"), tokens, seqs) == \
        pytest.approx(expected, rel=1e-9)


def test_the_405b_peak_is_its_residual_stream(registry):
    # hidden 16384: forward 2 x 131072 x 16384 x 2 B = 8.590 GB > sampler 4.295 + 3.078
    w = registry.workload("llama-3.1-405b")
    assert profile_peak(w, 131072, 1500) == pytest.approx(8.589934592e9, rel=1e-9)


def _without_kv_sizing(tmp_path: Path) -> Path:
    src = Path(roofkit.__file__).parents[2] / "specs" / "engines" / "vllm-v1.toml"
    text = src.read_text(encoding="utf-8")
    text = text.replace('name = "vllm-v1"', 'name = "v1-unsized"', 1)
    text = re.sub(r'aliases = \[.*?\]\n', "", text, count=1)
    text = re.sub(r'\[kv_sizing\]\n.*?\n\n\n', "\n", text, count=1, flags=re.S)
    assert "[kv_sizing]" not in text
    folder = tmp_path / "engines"
    folder.mkdir()
    (folder / "v1-unsized.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_the_simulated_kv_capacity_loses_the_peak(tmp_path):
    """Llama 3.1 405B FP8 on 8 MI300X, 500 prompts of 2048 + 2048 tokens, 131072-token
    budget: the KV cache peaks at 500 x 4096 tokens either way; its fraction of capacity
    grows by capacity / (capacity - 8.59 GB) when the profiling peak is taken off."""
    reg = roofkit.build_registry(entry_points=False, spec_paths=[_without_kv_sizing(tmp_path)])
    kw = dict(concurrency=500, requests=500, input_len=2048, output_len=8, tp=8,
              precision="fp8", kv_cache_dtype="fp8", max_num_seqs=500,
              max_batched_tokens=131072, registry=reg)
    sized = roofkit.simulate("llama-3.1-405b", "mi300x", engine="vllm-v1", **kw)
    plain = roofkit.simulate("llama-3.1-405b", "mi300x", engine="v1-unsized", **kw)
    assert any("profiling pass of 131072 tokens" in n and "8.59 GB" in n for n in sized.notes)
    assert not any("profiling pass" in n for n in plain.notes)
    assert sized.kv_peak_fraction > plain.kv_peak_fraction
    ratio = sized.kv_peak_fraction / plain.kv_peak_fraction
    # capacity = 0.9 x 192 GiB - weights of one device; peak 8.59e9 B
    from roofkit.circuit import api

    d = reg.device("mi300x")
    fp = api.footprint("llama-3.1-405b", "mi300x", precision="fp8", kv_cache_dtype="fp8",
                       registry=reg, tp=8, basis="calibrated")
    c0 = d.memory.capacity * 0.9 - fp.weights
    assert ratio == pytest.approx(c0 / (c0 - 8.589934592e9), rel=1e-6)


def test_profile_run_without_a_source_is_refused(tmp_path):
    bad = tmp_path / "engines"
    bad.mkdir()
    (bad / "x.toml").write_text(
        'name = "x"\ndisplay_name = "X"\nversion = "1"\n[scheduler]\nsource = "https://a"\n'
        '[host]\n[kv_sizing]\nprofile_run = true\n', encoding="utf-8")
    with pytest.raises(roofkit.SpecError, match=r"kv_sizing\.source"):
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path])
