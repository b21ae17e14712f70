"""The request-level estimate against hand arithmetic on a toy device and transformer: the
device work is the circuit's, node by node; serving adds host work and the request account."""

import numpy as np
import pytest
from serving_toy import KV_PER_TOKEN, PARAMS, STEP_BYTES_AT_ZERO_CONTEXT, toy_registry

from roofkit.errors import RoofkitError
from roofkit.serving import serve

BW = 1e12          # toy-gpu bandwidth, B/s
DISPATCH = 10e-6   # toy-gpu overheads.dispatch, s per step
LAUNCH = 5e-6      # toy-gpu overheads.launch, s per kernel
LAUNCHES = 23      # the circuit's dense layer: 10 kernels x 2 layers, + embed, final norm, head


@pytest.fixture(scope="module")
def reg(tmp_path_factory):
    return toy_registry(tmp_path_factory.mktemp("toy"))


def toy(reg, **kw):
    args = dict(batch=1, input_len=8, output_len=5, basis="datasheet", registry=reg)
    args.update(kw)
    return serve("toy-lm", "toy-gpu", **args)


def test_a_decode_step_is_its_bytes_over_bandwidth_plus_host_work(reg):
    # Batch 1: every node is memory-bound. Bytes per step, node by node (specs/ops, tp 1,
    # bf16): embed 512 + 516; per layer: norm 512 + 1024, qkv 262144 + 1536, rotary 1536 +
    # 256, kv write 512 + 512, attention 1024 + 512 * context, o 131072 + 1024, norm 1536,
    # gate_up 524288 + 2560, act 3072, down 262144 + 1536; final norm 1536; head 512000 +
    # 4512 (fp32 logits)  ->  2_911_652 + 1024 * context over two layers
    est = toy(reg)
    assert est.decode_host.launches == LAUNCHES
    for j, step in enumerate(est.itl_steps, start=1):
        context = 8 + j
        by_hand = (STEP_BYTES_AT_ZERO_CONTEXT + KV_PER_TOKEN * context) / BW \
            + DISPATCH + LAUNCHES * LAUNCH
        assert step == pytest.approx(by_hand, rel=1e-12)


def test_itl_is_summed_as_the_kv_read_grows_not_one_step_times_n(reg):
    B, prompt, n_out = 4, 100, 50
    est = toy(reg, batch=B, input_len=prompt, output_len=n_out)
    steps = est.itl_steps
    assert len(steps) == n_out - 1
    slope = B * KV_PER_TOKEN / BW               # each step reads one more token per sequence
    assert np.diff(steps) == pytest.approx(np.full(n_out - 2, slope), rel=1e-6)
    summed = (n_out - 1) * steps[0] + slope * (n_out - 1) * (n_out - 2) / 2
    assert est.e2e == pytest.approx(est.ttft + summed, rel=1e-12)
    assert est.e2e > est.ttft + (n_out - 1) * steps[0]
    assert est.itl_ms == pytest.approx(summed / (n_out - 1) * 1e3, rel=1e-12)
    assert est.output_tokens_per_s == pytest.approx(B * n_out / est.e2e)


def test_ttft_is_the_prefill_of_the_whole_batch(reg):
    one = toy(reg, batch=1, input_len=64, output_len=1)
    many = toy(reg, batch=8, input_len=64, output_len=1)
    assert one.itl_ms is None and one.e2e == one.ttft
    assert many.ttft > one.ttft
    assert one.ttft > DISPATCH + LAUNCHES * LAUNCH


def test_weights_and_kv_per_device_by_hand(reg):
    est = toy(reg)
    assert est.weights_per_device == 2 * PARAMS
    assert est.kv_per_token_per_device == KV_PER_TOKEN


def test_the_estimate_names_its_basis(reg):
    assert toy(reg).basis == "datasheet"
    cal = toy(reg, basis="calibrated")
    assert cal.basis == "calibrated"
    assert "no calibration for toy-gpu" in cal.basis_detail  # no calibration spec for it
    with pytest.raises(RoofkitError, match="basis"):
        toy(reg, basis="measured")


@pytest.mark.parametrize("field", ["batch", "input_len", "output_len", "tp"])
def test_counts_must_be_positive_integers(reg, field):
    with pytest.raises(RoofkitError, match=field):
        toy(reg, **{field: 0})


def test_host_work_is_the_host_dispatch_scenario_with_one_step_operation(reg):
    host = toy(reg).decode_host
    assert host.host_time == pytest.approx(DISPATCH + LAUNCHES * LAUNCH)
    scenario = host.scenario(device_time=1e-3)
    assert scenario.operations == 1 and scenario.launches == LAUNCHES
    assert scenario.host_time.to("s").magnitude == pytest.approx(host.host_time)


def test_an_engine_profile_replaces_the_step_dispatch_on_the_calibrated_basis():
    kw = dict(batch=8, input_len=32, output_len=16)
    plain = serve("llama-3.1-8b", "h100", **kw)
    vllm = serve("llama-3.1-8b", "h100", engine="vllm-v0", **kw)
    # vidur's sarathi-serve medians at batch 8: schedule, prepare, sampler, outputs, launch
    at8 = (0.16513 + 0.29317 + 0.88781 + 0.62438 + 0.05125) * 1e-3
    assert vllm.decode_host.dispatch == pytest.approx(at8)
    assert vllm.itl_ms - plain.itl_ms == pytest.approx((at8 - 9.65e-6) * 1e3)
    sheet = serve("llama-3.1-8b", "h100", engine="vllm-v0", basis="datasheet", **kw)
    assert any("calibrated basis only" in n for n in sheet.notes)


def test_request_energy_sums_the_steps_and_the_idle_host_time():
    import numpy as np

    import roofkit
    from roofkit.engine.calibration import ENERGY_IDLE_FRACTION

    reg = roofkit.build_registry(entry_points=False)
    est = roofkit.serve("llama-3.1-8b", "h100", tp=2, batch=4, input_len=64, output_len=6,
                        registry=reg)
    kw = {"tp": 2, "basis": "calibrated", "registry": reg}  # serve's default basis
    pre = roofkit.prefill("llama-3.1-8b", "h100", tokens=64, seqs=4, head=True, **kw)
    dec = roofkit.decode("llama-3.1-8b", "h100", batch=4, context=64 + np.arange(1, 6), **kw)
    host = est.prefill_host.host_time + 5 * est.decode_host.host_time
    device = pre.energy + float(np.sum(dec.energy)) + 700.0 * ENERGY_IDLE_FRACTION * host
    assert est.energy == pytest.approx(2 * device)  # both tensor-parallel devices
    assert est.energy_per_output_token == pytest.approx(est.energy / (4 * 6))
    assert est.to_dict()["energy_j"] == pytest.approx(est.energy)
