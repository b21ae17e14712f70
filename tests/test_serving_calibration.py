"""Calibration specs and the serving engine's step time (the calibrated roofline itself is
the circuit's: tests/test_circuit_calibrated.py)."""

import pytest

from roofkit.circuit.roofline import host_calibration
from roofkit.errors import SpecError
from roofkit.serving.overhead import engine_step_time
from roofkit.testing import make_registry, write_spec


def test_engine_step_time_sums_components_and_interpolates_in_batch(registry):
    vllm = host_calibration(registry)["engines"]["vllm-v0"]
    at8 = 0.16513 + 0.29317 + 0.88781 + 0.62438 + 0.05125       # ms, vidur medians, batch 8
    at16 = 0.27832 + 0.43911 + 0.94459 + 1.13542 + 0.05324
    assert engine_step_time(vllm, 8) == pytest.approx(at8 * 1e-3)
    assert engine_step_time(vllm, 12) == pytest.approx((at8 + at16) / 2 * 1e-3)
    assert engine_step_time(vllm, 4) == pytest.approx((at8 - (at16 - at8) / 2) * 1e-3)


def test_engine_step_time_is_held_at_the_largest_measured_batch(registry):
    """Above batch 64 (vidur's last row) the step time stays at its batch-64 value: a linear
    extension would reach 0.35 s a step at batch 3,200."""
    vllm = host_calibration(registry)["engines"]["vllm-v0"]
    at64 = 0.95218 + 1.16300 + 1.37026 + 4.10826 + 0.05497      # ms, vidur medians, batch 64
    assert engine_step_time(vllm, 64) == pytest.approx(at64 * 1e-3)
    assert engine_step_time(vllm, 3200) == pytest.approx(at64 * 1e-3)


def test_a_serve_batch_outside_the_engine_profile_range_says_so(registry):
    from roofkit.serving import estimate

    inside = estimate("llama-3.1-8b", "h100", batch=32, input_len=128, output_len=8,
                      engine="vllm-v0", registry=registry)
    outside = estimate("llama-3.1-8b", "h100", batch=512, input_len=128, output_len=8,
                       engine="vllm-v0", registry=registry)
    assert not inside.outside_profile_range
    assert outside.outside_profile_range and outside.to_dict()["outside_profile_range"]
    assert any("outside its measured batch range" in n and "8..64" in n
               for n in outside.notes)
    at64 = host_calibration(registry)["engines"]["vllm-v0"]
    assert outside.decode_host.dispatch == pytest.approx(engine_step_time(at64, 64))
    iv_in, iv_out = inside.intervals()["itl_ms"], outside.intervals()["itl_ms"]
    assert "range=inside" in iv_in.stratum and "range=outside" in iv_out.stratum


def test_every_measurement_cites_a_url(registry):
    for cal in registry.catalogues["calibration"].values():
        for path, m in cal.measurements():
            assert m.source.startswith("https://"), f"{cal.name}: {path}"
            assert m.where, f"{cal.name}: {path} needs `where`"


BAD = """
name = "toy-bad"
device = "h100-sxm"

[bandwidth]
value = "3 TB/s"
source = "somewhere"

[gemm.fp8]
source = "https://example.com"
throughput = { "4096x4096" = "1 PFLOP/s" }
"""


def test_a_measurement_without_a_url_or_with_a_bad_shape_is_refused(tmp_path):
    write_spec(tmp_path, "calibration", "toy-bad", BAD)
    with pytest.raises(SpecError) as err:
        make_registry(spec_paths=[tmp_path], cache=False)
    text = str(err.value)
    assert "bandwidth.source" in text and "URL" in text
    assert "4096x4096" in text and "MxNxK" in text


def test_a_calibration_of_an_unknown_device_is_refused(tmp_path):
    write_spec(tmp_path, "calibration", "ghost", """
        name = "ghost"
        device = "no-such-gpu"
        [bandwidth]
        value = "1 TB/s"
        source = "https://example.com"
        where = "nowhere"
        """)
    with pytest.raises(SpecError, match="unknown device 'no-such-gpu'"):
        make_registry(spec_paths=[tmp_path], cache=False)


def test_the_tensorrt_llm_session_step_is_derived_from_its_published_gpt_350m_run(registry):
    # host.toml: (40.81 ms - device time - 20 x launches x 2.7 us) / 20 steps, where the
    # device time and launch count are roofkit's own estimate of the same run on an A100 80GB
    from roofkit.serving import serve

    run = serve("gpt-350m", "a100-80gb", batch=1, input_len=60, output_len=20,
                precision="fp16", kv_cache_dtype="fp16", registry=registry)
    host = run.decode_host
    device = run.prefill_device + float(run.itl_steps.sum()) - 19 * host.host_time
    derived = (40.81e-3 - device - 20 * host.launches * host.launch) / 20
    from roofkit.serving.loso import without

    session = host_calibration(registry)["engines"]["tensorrt-llm-session"]
    assert session.components["step"].by_batch["1"] == pytest.approx(derived, abs=0.0005e-3)
    assert engine_step_time(session, 512) == engine_step_time(session, 1)  # one batch size
    # with this measurement alone (the other's source left out), the engine's step,
    # launches included, is what the published run shows per step
    alone, _ = without(registry, "github:zhjunqin/llm-learning")
    with_engine = serve("gpt-350m", "a100-80gb", batch=1, input_len=60, output_len=20,
                        precision="fp16", kv_cache_dtype="fp16", engine="tensorrt-llm-session",
                        registry=alone)
    assert with_engine.e2e_ms == pytest.approx(40.81, rel=0.001)


def test_a_third_party_run_of_the_same_benchmark_measures_the_session_step_again(registry):
    # host.toml's step.also: zhjunqin/LLM-Learning's gptSessionBenchmark of GPT-2 Medium
    # (TensorRT-LLM 0.8.0, RTX 3090), 60/20 at batch 1 in 39.47 ms; its device time is
    # roofkit's on the calibrated RTX 4090 scaled by the datasheet bandwidths 1008 / 936 GB/s
    from roofkit.serving import serve
    from roofkit.serving.loso import without

    def derived(total, output_len):
        run = serve("gpt2-medium", "rtx-4090", batch=1, input_len=60, output_len=output_len,
                    precision="fp16", kv_cache_dtype="fp16", registry=registry)
        host = run.decode_host
        device = (run.prefill_device + float(run.itl_steps.sum())
                  - (output_len - 1) * host.host_time) * 1008 / 936
        return (total - device - output_len * host.launches * host.launch) / output_len

    step = host_calibration(registry)["engines"]["tensorrt-llm-session"].components["step"]
    assert [m.source for m in step.also] == [
        "https://github.com/zhjunqin/LLM-Learning/blob/1bcaefe3498147e566ef06fdd63142ab2c1aae19"
        "/inference/TRT-LLM/run_trt_llm.md"]
    assert step.also[0].by_batch["1"] == pytest.approx(derived(39.47e-3, 20), abs=0.0005e-3)
    # the same file's 60/100 run agrees within 0.02 ms a step
    assert derived(195.73e-3, 100) == pytest.approx(step.also[0].by_batch["1"], abs=0.02e-3)
    session = host_calibration(registry)["engines"]["tensorrt-llm-session"]
    # the step is the mean of the two measurements
    assert engine_step_time(session, 1) == pytest.approx((1.013e-3 + 0.534e-3) / 2)
    # leaving NVIDIA's repository out keeps the third party's measurement alone
    reg, removed = without(registry, "github:nvidia/tensorrt-llm")
    assert "host:engines.tensorrt-llm-session" in removed
    kept = host_calibration(reg)["engines"]["tensorrt-llm-session"]
    assert engine_step_time(kept, 1) == pytest.approx(0.534e-3)
    assert kept.components["step"].also == []
    # and leaving the third party out keeps NVIDIA's
    reg, removed = without(registry, "github:zhjunqin/llm-learning")
    assert removed == ("host:engines.tensorrt-llm-session.components.step.also.0",)
    assert engine_step_time(host_calibration(reg)["engines"]["tensorrt-llm-session"], 1) == \
        pytest.approx(1.013e-3)


#: dennislee22/vLLM-benchmarking@b474d1e README.md, vLLM 0.10.1.1 V1, one A100 80GB,
#: Qwen2-7B-Instruct bf16: (README line, Running, Avg generation throughput tokens/s, mean
#: context mid-window = KV usage x capacity / Running - half the window's 10 s of growth)
VLLM_V1_WINDOWS = [("L1752", 10, 757.9, 1434), ("L1438", 20, 1435.6, 1481),
                   ("L1856", 50, 2863.4, 1675), ("L1891", 75, 3792.5, 1408),
                   ("L1926", 99, 4691.9, 1383), ("L1961", 195, 5737.5, 1445),
                   ("L1962", 195, 5380.9, 1731), ("L2001", 236, 6297.4, 1419),
                   ("L1995", 256, 6241.3, 1629)]


def test_the_vllm_v1_rest_of_step_is_derived_from_its_published_decode_windows(registry):
    # host.toml engines.vllm-v1.components.rest_of_step: a window's step is Running /
    # throughput; less roofkit's own step at that batch and context (device, graph padding
    # and startup, this profile's other components), the rest fits a + b * Running
    import numpy as np

    from roofkit.load.host import host_table
    from roofkit.load.scheduler import _graph_size
    from roofkit.load.steps import StepCosts
    from roofkit.serving.overhead import engine_profile, interp_linear_array

    eng = registry.spec("engines", "vllm-v1")
    costs = StepCosts("qwen2.5-7b", "a100-80gb", tp=1, precision="bf16", kv_cache_dtype="bf16",
                      registry=registry, max_rows=2560, max_seqs=512, max_context=2048,
                      engine="vllm-v1")
    host = host_table(eng, costs.roofline, registry, costs.kernels, 512)
    rest = engine_profile(host_calibration(registry), "vllm-v1").components["rest_of_step"]
    keys = sorted(int(k) for k in rest.by_batch)
    xs = np.array(keys, dtype=float)
    ys = np.array([rest.by_batch[str(k)] for k in keys])
    n, left = [], []
    for _, running, tokens_per_s, ctx in VLLM_V1_WINDOWS:
        pad = _graph_size(tuple(eng.cuda_graphs.batch_sizes), running)
        step = costs.decode_time(running, ctx, pad) + costs.graph_step + host.graph[running]
        own = float(interp_linear_array(np.array([float(running)]), xs, ys)[0])
        n.append(running)
        left.append(running / tokens_per_s - (step - own))
    slope, intercept = np.polyfit(n, left, 1)
    assert keys == [10, 256]
    assert rest.by_batch["10"] == pytest.approx(intercept + 10 * slope, abs=0.002e-3)
    assert rest.by_batch["256"] == pytest.approx(intercept + 256 * slope, abs=0.002e-3)
    resid = np.array(left) - (intercept + slope * np.array(n))
    assert float(np.sqrt(np.mean(resid ** 2))) == pytest.approx(0.62e-3, abs=0.01e-3)


#: a host calibration with one engine profile of one component, measured once
TOY_HOST = """
name = "toy-host"
[engines.toy]
source = "https://example.com/a"
where = "a run"
[engines.toy.components.step]
by_batch = { "1" = "1 ms" }
"""


def _toy_host_problems(tmp_path, more: str) -> str:
    write_spec(tmp_path, "calibration", "toy-host", TOY_HOST + more)
    with pytest.raises(SpecError) as err:
        make_registry(spec_paths=[tmp_path], cache=False)
    return str(err.value)


def test_a_further_measurement_of_a_step_without_its_url_or_batches_is_refused(tmp_path):
    text = _toy_host_problems(tmp_path, """
[[engines.toy.components.step.also]]
source = "somewhere"
[[engines.toy.components.step.also]]
source = "https://example.com/b"
by_batch = { "one" = "0.5 ms" }
""")
    assert "engines.toy.components.step.also.0.source" in text and "URL" in text
    assert "engines.toy.components.step.also.0.by_batch" in text
    assert "engines.toy.components.step.also.1.by_batch.one" in text


@pytest.mark.parametrize(("also", "message"), [
    ('also = "x"', "expected an array, got 'x'"),
    ('also = ["x"]', "expected a table (StepMeasurement), got 'x'"),
])
def test_further_measurements_are_an_array_of_tables(tmp_path, also, message):
    # a string is not read character by character, nor an item that is not a table
    text = _toy_host_problems(tmp_path, also + "\n")
    assert message in text and "engines.toy.components.step.also" in text
    assert "Traceback" not in text
