"""A third-party plugin adds an op kind (Python), its cost rule and a circuit template
(TOML in its spec dir) and a cost model; a workload on that template uses all of them."""

from pathlib import Path

import pytest

import roofkit
from roofkit import CostModel, OpKind, hookimpl

SPECS = Path(__file__).with_name("circuit_plugin")


def _pessimist(flops, nbytes, peak, bandwidth, launch=0.0):
    """No overlap of compute and memory: t = flops / peak + bytes / bandwidth."""
    return flops / peak + nbytes / bandwidth


class FusedNormPlugin:
    @hookimpl
    def roofkit_register_op_kinds(self):
        return [OpKind("fused_add_rms_norm", "elementwise", ("width",), weight_bearing=True,
                       description="residual add + RMSNorm")]

    @hookimpl
    def roofkit_register_cost_models(self):
        return [CostModel("pessimist", _pessimist, "compute and memory do not overlap")]

    @hookimpl
    def roofkit_register_spec_dirs(self):
        return [SPECS]


@pytest.fixture(scope="module")
def reg():
    return roofkit.build_registry(entry_points=False, plugins=[FusedNormPlugin()])


def test_the_plugin_registers_its_op_kind_rule_template_and_cost_model(reg):
    assert reg.op_kind("fused_add_rms_norm").role == "elementwise"
    assert "fused_add_rms_norm" in reg.ops
    assert "dense-fused" in reg.circuits
    assert reg.cost_model("pessimist").node_time is _pessimist
    assert reg.provider("op_kinds", "fused_add_rms_norm") == "FusedNormPlugin-0"


def test_the_circuit_uses_the_plugin_op_with_the_plugin_cost_model(reg):
    est = roofkit.decode("tiny-fused", "h100", batch=8, context=100, cost_model="pessimist",
                         basis="datasheet", registry=reg)
    rows = {r.node: r for r in est.rows}
    norm = rows["attention.norm"]
    assert norm.op == "fused_add_rms_norm" and norm.count == 4
    assert norm.flops == 4 * 5 * 8 * 512
    assert norm.bytes == 4 * (512 * 2 + 3 * 8 * 512 * 2)
    peak, bw = 66.9e12, 3.35e12  # vector ops: the fp32 peak; HBM3 bandwidth
    assert norm.time == pytest.approx(norm.flops / peak + norm.bytes / bw)
    assert est.cost_model == "pessimist"
    assert rows["ffn.norm"].op == "fused_add_rms_norm"


def test_the_plugin_op_counts_in_the_footprint(reg):
    fp = roofkit.footprint("tiny-fused", registry=reg)
    plain_norms = 512 * 2  # the final RMSNorm
    assert fp.weights_by_role["norm"] == 4 * 2 * 512 * 2 + plain_norms


def test_without_the_plugin_its_specs_are_unknown():
    bare = roofkit.build_registry(entry_points=False)
    assert "dense-fused" not in bare.circuits
    with pytest.raises(roofkit.UnknownNameError):
        bare.cost_model("pessimist")


def test_results_record_the_plugin_set_that_produced_them(reg):
    # STYLE 12: every result says which plugins its registry was built from
    plugin = next(p for p in reg.plugin_set if "FusedNormPlugin" in p)
    builtin = "roofkit_builtins.cost_models (roofkit "
    results = [
        roofkit.decode("llama-3.1-8b", "h100", registry=reg).to_dict(),
        roofkit.prefill("llama-3.1-8b", "h100", tokens=64, registry=reg).to_dict(),
        roofkit.Engine.solve("llama-3.1-8b", "h100", batch_size=2, registry=reg).to_dict(),
        roofkit.serve("llama-3.1-8b", "h100", output_len=4, registry=reg).to_dict(),
        roofkit.sweep("llama-3.1-8b", ["h100"], batch_sizes=[1, 2], registry=reg).meta,
        roofkit.sweep("llama-3.1-8b", ["h100"], batch_sizes=[1, 2], mode="decode",
                      contexts=[128], registry=reg).meta,
    ]
    for d in results:
        assert plugin in d["plugins"]
        assert any(p.startswith(builtin) for p in d["plugins"])
    plain = roofkit.build_registry(entry_points=False)
    assert not any("FusedNormPlugin" in p
                   for p in roofkit.decode("llama-3.1-8b", "h100", registry=plain).plugins)
