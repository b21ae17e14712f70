"""The serving lowering agrees with the circuit estimator (roofkit.circuit) on the same model:
weight bytes, KV bytes per token, step FLOPs, and the kernel count host work is charged for."""

import numpy as np
import pytest

import roofkit
from roofkit.serving import serve
from roofkit.serving.work import Formats, Shape, step_kernels

WORKLOADS = ["llama-2-7b", "llama-3.1-8b", "llama-3.1-70b", "mistral-7b", "qwen2.5-7b",
             "gemma-2-9b", "mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-20b"]


@pytest.mark.parametrize("name", WORKLOADS)
def test_weights_and_kv_per_token_match_the_circuit_footprint(name):
    est = serve(name, "h200", batch=1, input_len=16, output_len=2)
    fp = roofkit.footprint(name)
    assert est.weights_per_device == pytest.approx(fp.weights, rel=1e-3)
    assert est.kv_per_token_per_device == pytest.approx(fp.kv_per_token, rel=1e-9)


@pytest.mark.parametrize("name", ["llama-2-7b", "mixtral-8x7b", "qwen2.5-7b"])
@pytest.mark.parametrize("batch, context", [(1, 2048), (64, 640)])
def test_decode_flops_match_the_circuit(registry, name, batch, context):
    shape = Shape.of(registry.workload(name))
    kernels = step_kernels(shape, Formats(weight=2.0), 1, batch, context=float(context))
    ours = sum(k.count * float(np.mean(k.flops)) for k in kernels)
    theirs = sum(r.flops for r in roofkit.decode(name, "h100", batch=batch,
                                                 context=context).rows)
    assert ours == pytest.approx(theirs, rel=1e-3)  # the circuit also counts norm FLOPs


def test_host_launches_are_the_circuit_nodes_plus_the_tp_all_reduces():
    from roofkit.circuit.model import build_model

    reg = roofkit.default_registry()
    model = build_model(reg.workload("llama-3.1-70b"), reg, precision=None, formats=None,
                        kv_cache_dtype=None, ssm_h_dtype=None)
    nodes = sum(n.count for n in model.nodes if n.section != "draft")
    assert serve("llama-3.1-70b", "h100", tp=1, output_len=2).decode_host.launches == nodes
    assert serve("llama-3.1-70b", "h100", tp=4, output_len=2).decode_host.launches == \
        nodes + 2 * 80
