"""Elementwise traffic of a layer by the stack's kernels: the byte counts of the op chains
in roofkit.fleet.elementwise, by hand, and their effect on a step."""

import json

import pytest

from roofkit.fleet.elementwise import layer_bytes, lora_bytes
from roofkit.fleet.layout import LayoutError
from roofkit.fleet.model import arch_of
from roofkit.fleet.step import adapted_gemms
from roofkit.fleet.training import train


def test_fused_and_eager_bytes_per_token(registry):
    a = arch_of("qwen-7b", registry)  # h 4096, 32 heads of 128 (MHA), gated FFN 11008
    h, f, rope = 4096, 11008, (32 + 32) * 128
    fwd, bwd = layer_bytes(a, 1, 1, "fused", False, 0.0, 1.0)
    assert fwd == pytest.approx(2 * (10 * h + 3 * f + 2 * rope)) and bwd == 2 * fwd
    fwd, bwd = layer_bytes(a, 1, 1, "eager", False, 0.0, 1.0)
    # two fp32 RMSNorms (36 / 68 B) and residual adds (6 / 6 B), rotary (60 / 44 B),
    # SwiGLU (10 / 18 B)
    assert fwd == pytest.approx(2 * (36 + 6) * h + 60 * rope + 10 * f)
    assert bwd == pytest.approx(2 * (68 + 6) * h + 44 * rope + 18 * f)


def test_peft_adapter_ops_on_every_linear(registry):
    a = arch_of("qwen-7b", registry)
    gemms = adapted_gemms(a, "all")
    # qkv (4096 -> 12288), o (4096 -> 4096), w1 and w2 (4096 -> 11008), c_proj (11008 -> 4096)
    assert sorted((g.k, g.n) for g in gemms) == sorted(
        [(4096, 12288), (4096, 4096), (4096, 11008), (4096, 11008), (11008, 4096)])
    k, n = 4 * 4096 + 11008, 12288 + 4096 + 2 * 11008 + 4096
    fwd, bwd = lora_bytes(gemms, 1, True)
    assert float(fwd) == pytest.approx(5 * k + 10 * n)
    assert float(bwd) == pytest.approx(4 * n + 11 * k)
    assert len(adapted_gemms(a, "attention")) == 2


def test_eager_kernels_and_adapter_ops_cost_time(registry):
    kw = dict(seq_len=4096, global_batch=8, recompute="full", lora=64, registry=registry)
    fused = train("qwen-7b", "1xa100-80gb", **kw)
    eager = train("qwen-7b", "1xa100-80gb", kernels="eager", **kw)
    peft = train("qwen-7b", "1xa100-80gb", kernels="eager", lora_targets="all",
                 lora_dropout=True, **kw)
    assert fused.step_time_s < eager.step_time_s < peft.step_time_s


def test_unknown_kernels_are_refused(registry):
    with pytest.raises(LayoutError, match="kernels must be one of fused, eager"):
        train("qwen-7b", "1xa100-80gb", seq_len=2048, kernels="jit", registry=registry)


def test_cli_train_takes_the_stack_flags(capsys):
    from roofkit.cli import main

    base = ["train", "qwen-7b", "1xa100-80gb", "--seq-len", "2048", "--lora", "64",
            "--recompute", "full", "--json", "--no-plugins"]
    assert main(base) == 0
    fused = json.loads(capsys.readouterr().out)
    assert main([*base, "--kernels", "eager", "--lora-targets", "all"]) == 0
    eager = json.loads(capsys.readouterr().out)
    assert eager["layout"]["kernels"] == "eager" and eager["layout"]["lora_targets"] == "all"
    assert eager["step_time_s"] > fused["step_time_s"]
    assert main(["train", "bloom-176b", "jean-zay-a100", "--devices", "384", "--tp", "4",
                 "--pp", "12", "--dp", "8", "--seq-len", "2048", "--uneven-stages",
                 "--json", "--no-plugins"]) == 0
    assert json.loads(capsys.readouterr().out)["layout"]["uneven_stages"] is True
