"""Energy on the load (simulate) and training paths: the per-op model of roofkit.energy."""

import math

import numpy as np
import pytest

from roofkit import energy


def test_a_load_step_costs_what_the_circuit_step_costs():
    # the simulator's step table and the circuit's decode estimate are the same per-op model:
    # 8 sequences at a context on the table's grid, over the estimate's own time
    from roofkit.circuit import decode
    from roofkit.load.energy import StepEnergy
    from roofkit.load.steps import StepCosts
    from roofkit.registry import resolve

    reg = resolve(None)
    costs = StepCosts("llama-3.1-8b", "h100-sxm", registry=reg, max_rows=64, max_seqs=16,
                      max_context=4096)
    ctx = float(costs.ctx_grid[40])
    se = StepEnergy(costs, reg.device("h100-sxm"))
    est = decode("llama-3.1-8b", "h100-sxm", batch=8, context=ctx, registry=reg)
    t = float(est.time)
    got = float(se.steps(np.array([t]), np.array([8]), np.array([8]), np.array([ctx]))[0])
    assert got == pytest.approx(float(energy.step_energy(est)), rel=1e-6)
    # and the TDP model where the device has no constants: 0.3 TDP t + 0.7 TDP F/peak
    se.c = None
    f = float(sum(r.flops for r in est.rows if r.slot == "bf16")) / 989.4e12
    tdp = se.steps(np.array([t]), np.array([8]), np.array([8]), np.array([ctx]))[0]
    assert tdp == pytest.approx(700.0 * (0.3 * t + 0.7 * f), rel=1e-3)


def test_simulate_reports_energy_per_token_request_and_power():
    from roofkit.load import simulate

    r = simulate("llama-3.1-8b", "h100-sxm", concurrency=8, input_len=256, output_len=64,
                 requests=16, engine="vllm")
    d = r.to_dict()
    assert d["energy_model"] == "per-op"
    assert d["energy_j"] == pytest.approx(r.energy) and r.energy > 0.0
    assert d["energy_per_output_token_j"] == pytest.approx(r.energy / r.output_tokens)
    assert d["energy_per_request_j"] == pytest.approx(r.energy / 16)
    p = d["average_power_per_device_w"]
    # between the busy floor and the power cap of the board
    c = energy.constants("h100-sxm")
    assert c.p_idle <= p <= 700.0 and math.isclose(p, r.energy / r.duration)


def test_simulate_energy_falls_back_to_the_tdp_model():
    from roofkit.load import simulate

    r = simulate("llama-3.1-8b", "mi300x", concurrency=4, input_len=128, output_len=32,
                 requests=8, engine="vllm")
    assert r.energy_model == "tdp"
    # TDP x (0.3 + 0.7 HFU): between the idle floor and the TDP, 750 W for an MI300X
    assert 0.3 * 750.0 <= r.average_power_per_device <= 750.0


def _train_parts(pp=1, micro=4, node_power=None):
    import types

    device = types.SimpleNamespace(name="dev", power=types.SimpleNamespace(tdp=700.0),
                                   compute={"bf16": 1e15})
    cluster = types.SimpleNamespace(node_power=node_power, devices_per_node=8)
    layout = types.SimpleNamespace(pp=pp, devices=8, precision="bf16")
    r = {"micro_batches": micro, "weights": 10e9, "gradients": 5e9, "optimizer_state": 20e9,
         "activations": 8e9, "hardware_flops": 8 * 4e14}
    return device, cluster, layout, r


TABLE = {"dev": energy.EnergyConstants("dev", p_idle=80.0, e_byte=100e-12, sources={"x": "y"},
                                       p_static=100.0, flops_at_tdp={"bf16": 6e14})}


def test_training_traffic_is_weights_gradients_activations_and_optimizer():
    from roofkit.fleet.training import step_traffic

    _, _, layout, r = _train_parts()
    # 4 x (3 x 10 + 2 x 5 + 2 x 8) GB + 2 x 10 + 5 + 2 x 20 GB = 224 + 65 GB
    assert step_traffic(r, layout) == pytest.approx(289e9)
    _, _, layout, r = _train_parts(pp=2)  # two micro-batches in flight: 8 GB / 2 each
    assert step_traffic(r, layout) == pytest.approx(4 * (30 + 10 + 8) * 1e9 + 65e9)


def test_training_step_energy_by_hand():
    from roofkit.fleet.training import step_energy

    device, cluster, layout, r = _train_parts()
    # per device: 100 W x 1 s + (700 - 100) / 6e14 x 4e14 FLOP + 100 pJ x 289 GB
    per = 100.0 + 400.0 + 28.9
    assert step_energy(device, cluster, layout, r, 1.0, TABLE) == pytest.approx(8 * per)
    # capped at TDP x t per device, and the node's other power on top: 10.2 kW - 8 x 700 W
    device, cluster, layout, r = _train_parts(node_power=10200.0)
    got = step_energy(device, cluster, layout, r, 0.5, TABLE)
    assert got == pytest.approx(8 * 700.0 * 0.5 + 4600.0 * 0.5)
    device.name = "other"  # no per-op constants: no per-op figure
    assert step_energy(device, cluster, layout, r, 1.0, TABLE) is None


def test_train_json_gives_the_per_op_energy_per_million_tokens():
    from roofkit.fleet.training import train

    est = train("llama-3.1-8b", "dgx-h100", tp=1, dp=8, seq_len=2048)
    d = est.to_dict()
    e = d["energy_per_step_measured_model_j"]
    assert 0.0 < e <= d["energy_per_step_j"] + 1e-9  # never above the node's maximum power
    assert d["energy_per_million_tokens_measured_model_j"] == pytest.approx(
        e / est.tokens_per_step * 1e6)


def test_decode_json_gives_the_per_op_energy_beside_the_tdp_energy():
    from roofkit.circuit import decode

    est = decode("llama-3.1-8b", "h100-sxm", batch=8, context=1024)
    tot = est.to_dict()["totals"]
    assert tot["energy_measured_model_j"] == pytest.approx(float(energy.step_energy(est)))
    c = energy.constants("h100-sxm")
    t = float(est.time)
    assert c.p_busy * t < tot["energy_measured_model_j"] <= 700.0 * t
