"""Leave-one-source-out: a source's origin, the registry without its constants, and the
LOSO prediction of a case beside its in-sample one."""

import attrs
import pytest

from roofkit.circuit.roofline import device_roofline
from roofkit.serving.loso import origin, without
from roofkit.serving.validation import LOSO, predict, run


@pytest.mark.parametrize(("url", "key"), [
    ("https://github.com/NVIDIA/TensorRT-LLM/blob/abc123/docs/source/performance.md#x",
     "github:nvidia/tensorrt-llm"),
    ("https://raw.githubusercontent.com/NVIDIA/TensorRT-LLM/release/0.5.0/docs/perf.md",
     "github:nvidia/tensorrt-llm"),
    ("https://github.com/samuel-bohman/AI-benchmarking-guide/blob/26d1/Azure_Results/x.md",
     "github:azure/ai-benchmarking-guide"),   # a fork read for the upstream file
    ("https://arxiv.org/abs/2205.05198v2", "arxiv:2205.05198"),
    ("https://buildkite.com/vllm/performance-benchmark/builds/9523", "buildkite:vllm"),
    ("https://www.amd.com/en/developer/resources/rocm-hub/dev-ai/performance-results.html",
     "amd.com"),
])
def test_origin_is_the_publishers_repository_or_domain(url, key):
    assert origin(url) == key


def test_without_an_origin_its_measurements_fall_back_to_the_datasheet(registry):
    reg, removed = without(registry, "github:azure/ai-benchmarking-guide")
    assert "h100-sxm:bandwidth" in removed and "h200:bandwidth" in removed
    dev = registry.device("h100-sxm")
    before = device_roofline(dev, "calibrated", registry)
    after = device_roofline(dev, "calibrated", reg)
    assert before.bandwidth < dev.memory.bandwidth  # measured triad, below the 3.35 TB/s
    assert after.bandwidth == dev.memory.bandwidth
    assert after.peaks["bf16"] == before.peaks["bf16"]  # stas00's GEMM stays


def test_an_engine_component_measured_apart_is_removed_for_its_own_origin(registry):
    # vllm-v1's rest_of_step cites its own source: removing that origin drops the
    # component alone, and the profile's other components (vLLM's PR) stay
    from roofkit.circuit.roofline import host_calibration
    from roofkit.serving.overhead import engine_step_time

    path = "host:engines.vllm-v1.components.rest_of_step"
    reg, removed = without(registry, "github:dennislee22/vllm-benchmarking")
    assert removed == (path,)
    before = host_calibration(registry)["engines"]["vllm-v1"]
    after = host_calibration(reg)["engines"]["vllm-v1"]
    assert set(before.components) - set(after.components) == {"rest_of_step"}
    assert engine_step_time(after, 128) == pytest.approx(
        engine_step_time(before, 128) - before.components["rest_of_step"].by_batch["10"]
        - (before.components["rest_of_step"].by_batch["256"]
           - before.components["rest_of_step"].by_batch["10"]) * (128 - 10) / (256 - 10))
    reg, removed = without(registry, "github:vllm-project/vllm")
    assert "host:engines.vllm-v1" in removed and path not in removed
    # the PR's components go with their profile's source, the separately cited one stays
    assert set(host_calibration(reg)["engines"]["vllm-v1"].components) == {"rest_of_step"}


def test_an_origin_without_constants_leaves_the_registry_as_it_is(registry):
    reg, removed = without(registry, "amd.com")
    assert reg is registry and removed == ()


def test_a_case_from_the_engine_profiles_origin_is_scored_without_that_profiles_figure(registry):
    cat = registry.catalogues["validation"]
    case = next(cat[k] for k in cat if cat[k].config.runtime == "tensorrt-llm-session"
                and not cat[k].not_predicted and not cat[k].superseded_by)
    res = run(registry=registry, cases=[case]).cases[0]
    assert res.origin == "github:nvidia/tensorrt-llm"
    assert "host:engines.tensorrt-llm-session" in res.removed
    reg, _ = without(registry, res.origin)
    assert res.predicted[LOSO] == pytest.approx(predict(case, "calibrated", reg))
    assert res.predicted[LOSO] != pytest.approx(res.predicted["calibrated"])
    # the session step's measurement from another origin stays: not the bare roofline's
    bare = attrs.evolve(case, config=attrs.evolve(case.config, runtime=""))
    assert res.predicted[LOSO] != pytest.approx(predict(bare, "calibrated", reg))


def test_a_case_of_an_independent_origin_keeps_its_prediction(registry):
    cat = registry.catalogues["validation"]
    case = next(cat[k] for k in cat if origin(cat[k].source.url) == "github:pytorch-labs/gpt-fast")
    res = run(registry=registry, cases=[case]).cases[0]
    assert res.removed == ()
    assert res.predicted[LOSO] == res.predicted["calibrated"]


def test_breakdowns_group_the_scored_cases(registry):
    cat = registry.catalogues["validation"]
    cases = [cat[k] for k in cat if origin(cat[k].source.url) == "github:microsoft/vidur"]
    report = run(registry=registry, cases=cases)
    rows = report.breakdown("engine")
    assert [r["engine"] for r in rows] == ["vidur"] and rows[0]["cases"] == len(report.scored())
    with pytest.raises(ValueError, match="one of metric, engine, device_class"):
        report.breakdown("vendor")


def test_load_cases_are_scored_leave_one_source_out(registry):
    from roofkit.load.validation import run as run_load

    cat = registry.catalogues["load_cases"]
    cases = [cat[k] for k in sorted(cat)][:2]
    report = run_load(registry=registry, cases=cases)
    for c in report.cases:
        assert c.origin == origin(cat[c.name].source.url)
        if c.predicted.get("calibrated") is not None and not c.removed:
            assert c.predicted[LOSO] == c.predicted["calibrated"]
    named = {s["constant"] for s in report.independence}
    assert any(n.startswith("engine:") for n in named)


def test_an_engine_profile_sharing_a_cases_origin_is_kept_and_said_in_sample(registry):
    from roofkit.serving.loso import statements

    rows = statements(registry, ["github:vllm-project/vllm"], engines=True)
    vllm = [r for r in rows if r["constant"] == "engine:vllm-v1:scheduler"]
    assert vllm and vllm[0]["cases_in_sample"] == 1 and "in sample" in vllm[0]["statement"]
