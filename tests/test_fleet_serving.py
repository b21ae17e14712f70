"""Serving on a cluster layout: TP x PP from the circuit's estimate, EP with data-parallel
attention, refused layouts, the serve CLI flags."""

import json

import pytest

import roofkit
from roofkit import SpecError
from roofkit.cli import main
from roofkit.fleet.model import arch_of
from roofkit.fleet.serving import serve_fleet


def test_tp_pp_splits_the_circuit_estimate_over_stages(registry):
    kw = dict(batch=16, input_len=1024, output_len=256, precision="bf16", registry=registry)
    one = roofkit.serve("llama-3.1-405b", "h100", tp=8, **kw)
    two = serve_fleet("llama-3.1-405b", "dgx-h100", tp=8, pp=2, **kw)
    assert two.fits and not one.fits  # 810 GB of weights need two nodes
    assert two.memory_per_device_bytes == pytest.approx(one.memory_per_device / 2)
    hop = 16 * 16384 * 2 / 50e9 + 5e-6  # the activations of the batch over one NIC
    assert two.itl_s == pytest.approx(one.itl_ms / 1e3 + hop, rel=1e-3)


def test_expert_parallel_with_attention_dp_holds_a_16th_of_the_experts(registry):
    e = serve_fleet("deepseek-v3", "16xh100", ep=16, attention_dp=16, batch=256,
                    input_len=1024, output_len=256, registry=registry)
    arch = arch_of("deepseek-v3", registry)
    assert e.fits and e.layout["devices"] == 16
    assert e.memory_per_device_bytes > arch.expert_params / 16  # fp8: one byte per weight
    assert e.breakdown["collectives"] > 0  # dispatch and combine all-to-alls


@pytest.mark.parametrize("kw, reason", [
    (dict(ep=3, attention_dp=3), "must divide the 256 experts"),
    (dict(tp=3), "does not divide the 128 attention heads"),
    (dict(ep=16, attention_dp=16, batch=8), "not a multiple of attention_dp"),
])
def test_invalid_serving_layouts_are_refused(registry, kw, reason):
    with pytest.raises(SpecError, match=reason):
        serve_fleet("deepseek-v3", "dgx-h100", registry=registry, **{"batch": 48, **kw})


def test_cli_serve_takes_pp_and_a_cluster(capsys):
    assert main(["serve", "llama-3.1-405b", "dgx-h100", "--tp", "8", "--pp", "2", "--batch",
                 "4", "-p", "bf16", "--json", "--no-plugins"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["layout"]["pp"] == 2 and d["fits"]
    assert main(["serve", "deepseek-v3", "h100", "--ep", "16", "--attention-dp", "16",
                 "--batch", "64", "--json", "--no-plugins"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["cluster"] == "16xh100-sxm" and d["itl_ms"] > 0
