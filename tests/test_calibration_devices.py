"""Calibrations read from published matmul sweeps (MAMF): their peaks replace the
datasheet's on the calibrated basis; a bandwidth nobody measured stays the datasheet's and
keeps an estimate outside the calibrated range of the intervals."""

import json
import re
from pathlib import Path

import pytest

import roofkit
from roofkit.circuit.roofline import device_roofline


@pytest.mark.parametrize(("device", "slot", "tflops"), [
    ("b200", "bf16", 1745.0), ("b200", "fp8", 3432.5), ("gb200", "bf16", 1822.0),
    ("gb200", "fp8", 3615.6), ("mi325x", "bf16", 784.9), ("gaudi3", "bf16", 1243.0),
    ("gaudi3", "fp8", 1289.5), ("mi355x", "bf16", 1565.0),
])
def test_mamf_peaks_replace_the_datasheet_on_the_calibrated_basis(registry, device, slot,
                                                                  tflops):
    dev = registry.device(device)
    roof = device_roofline(dev, "calibrated", registry)
    assert roof.peaks[slot] == pytest.approx(tflops * 1e12)
    assert roof.peaks[slot] < dev.compute[slot]
    if device == "b200":  # measured bandwidth too (test_the_b200_bandwidth_...)
        return
    assert roof.bandwidth == dev.memory.bandwidth and not roof.bandwidth_measured
    assert "datasheet ceiling kept for bandwidth" in roof.basis


def test_the_b200_bandwidth_is_the_nvbench_add_row_of_cccl(registry):
    cal = registry.catalogues["calibration"]["b200"]
    # NVIDIA/cccl PR #7391, 'add' table, NVIDIA B200, F16 at 2^28 elements: 3 arrays of
    # 2^28 2-byte elements (2 loads + 1 store) in 239.643 us
    assert cal.bandwidth.value == pytest.approx(6.721e12)
    moved = 3 * 2**28 * 2  # bytes read + written, as nvbench counts them
    assert cal.bandwidth.value == pytest.approx(moved / 239.643e-6, rel=1e-3)
    assert cal.bandwidth.source == "https://github.com/NVIDIA/cccl/pull/7391"
    assert "'add' table" in cal.bandwidth.where and "6.721 TB/s" in cal.bandwidth.where
    dev = registry.device("b200")
    roof = device_roofline(dev, "calibrated", registry)
    assert roof.bandwidth == pytest.approx(6.721e12) and roof.bandwidth_measured
    assert roof.bandwidth < dev.memory.bandwidth
    assert "bandwidth" not in roof.basis.split("datasheet ceiling kept for", 1)[1]
    assert roof.provenance["memory.bandwidth"].startswith("calibration b200")
    est = roofkit.serve("llama-3.1-8b", "b200", batch=8, input_len=128, output_len=8,
                        registry=registry)
    assert all("range=inside" in iv.stratum for iv in est.intervals().values())


def test_fp16_stands_for_bf16_where_the_datasheet_lists_equal_peaks(registry):
    roof = device_roofline(registry.device("b200"), "calibrated", registry)
    assert roof.peaks["fp16"] == roof.peaks["bf16"]


def test_an_unmeasured_bandwidth_is_outside_the_calibrated_range(registry):
    est = roofkit.serve("llama-3.1-8b", "gb200", batch=8, input_len=128, output_len=8,
                        registry=registry)
    assert all("range=outside" in iv.stratum for iv in est.intervals().values())
    h100 = roofkit.serve("llama-3.1-8b", "h100-sxm", batch=8, input_len=128, output_len=8,
                         registry=registry)
    assert all("range=inside" in iv.stratum for iv in h100.intervals().values())


@pytest.mark.parametrize(("device", "slot", "tflops"), [
    # mag-/gpu_benchmark MAMF table (torch.mm, bf16)
    ("l40s", "bf16", 252.0), ("l4", "bf16", 91.4), ("rtx-4090", "bf16", 178.8),
    # zzc0721/torch-performance-test-data database.md, row NVIDIA L40S (torch.mm, best size)
    ("l40s", "fp16", 264.02), ("l40s", "fp32", 46.88),
    # vLLM PR #6677 on an L40S: torch._scaled_mm 512x4096x4096 in 45.50 us,
    # 2 * 512 * 4096 * 4096 / 45.50e-6 = 377.58e12 FLOP/s, written to one decimal
    ("l40s", "fp8", 377.6),
    # binbinsh/gpu-bench results/4090.json (cuBLASLt 8192^3): fp16 175.067, "fp32" is TF32
    ("rtx-4090", "fp16", 175.1), ("rtx-4090", "tf32", 89.9),
    # DeepBench DGX-1 V100 cuBLAS sweep, best GEMM 4096x7000x4096 (fp16); GPUInspector.jl
    # V100-SXM2-32GB page, peakflops_gpu (fp32)
    ("v100", "fp16", 112.3), ("v100", "fp32", 15.5),
])
def test_measured_matmul_peaks_of_the_added_devices(registry, device, slot, tflops):
    roof = device_roofline(registry.device(device), "calibrated", registry)
    assert roof.peaks[slot] == pytest.approx(tflops * 1e12)
    assert roof.provenance[f"compute.{slot}"].startswith(f"calibration {device}")


@pytest.mark.parametrize(("device", "gbs", "sheet_gbs"), [
    ("rtx-4090", 918.8, 1008.0),  # cudaMemcpy device to device, read + write counted
    ("v100", 814.0, 900.0),  # te42kyfo/gpu-benches gpu-stream triad
    ("l4", 235.0, 300.0),  # chsasank/device-benchmarks tensor copy, read + write counted
])
def test_measured_bandwidths_of_the_added_devices(registry, device, gbs, sheet_gbs):
    dev = registry.device(device)
    roof = device_roofline(dev, "calibrated", registry)
    assert dev.memory.bandwidth == pytest.approx(sheet_gbs * 1e9)
    assert roof.bandwidth == pytest.approx(gbs * 1e9) and roof.bandwidth_measured


def test_the_v100_bandwidth_names_its_triad_reading(registry):
    cal = registry.catalogues["calibration"]["v100"]
    assert cal.bandwidth.value == pytest.approx(814e9)
    assert "triad" in cal.bandwidth.where and "814 GB/s" in cal.bandwidth.where


def test_a_compute_only_calibration_keeps_the_datasheet_bandwidth_and_says_so(registry):
    # the L40S calibration measures matmul (bf16, fp16, fp32, fp8) but not its bandwidth
    roof = device_roofline(registry.device("l40s"), "calibrated", registry)
    assert roof.measured and not roof.bandwidth_measured
    assert roof.bandwidth == pytest.approx(864e9)
    assert "datasheet ceiling kept for bandwidth" in roof.basis
    kept = roof.basis.split("datasheet ceiling kept for", 1)[1]
    assert "compute.tf32" in kept and "compute.fp8" not in kept
    # 377.6 TFLOP/s measured against the 733 TFLOP/s datasheet: 51.5 % of it
    assert roof.peaks["fp8"] / registry.device("l40s").compute["fp8"] == pytest.approx(
        377.58 / 733, rel=1e-3)


def test_the_gb200_fp4_sweep_sets_its_peak_and_size_curve(registry):
    roof = device_roofline(registry.device("gb200"), "calibrated", registry)
    assert roof.peaks["fp4"] == pytest.approx(7627.6e12)
    # Azure ND GB200 v6 cuBLASLt FP4: 287.2 TFLOP/s at 1024^3 over the sweep's best 7627.6
    assert roof.efficiency("fp4", 2.0 * 1024**3) == pytest.approx(287.2 / 7627.6)
    assert roof.efficiency("fp4", 2.0 * 16384**3) == pytest.approx(1.0)
    # the FP8 curve is relative to its own sweep's best (2906.9) and scales the MAMF peak
    assert roof.matmul_rate("fp8", 2.0 * 4096**3) == pytest.approx(3615.6e12 * 2834.6 / 2906.9)


def test_the_added_constants_share_no_origin_with_a_validation_case(registry):
    from roofkit.serving.loso import constants, origin

    cases = [c for kind in ("validation", "training", "load_cases")
             for c in registry.catalogues[kind].values()]
    assert len(cases) >= 206 + 27 + 48
    case_origins = {origin(c.source.url) for c in cases}
    added = [c for c in constants(registry)
             if c.calibration in ("rtx-4090", "v100", "l40s", "l4", "rtx-5090", "m3-max",
                                  "jetson-orin-nano-8gb", "dgx-spark",
                                  "jetson-agx-orin-64gb", "tpu-v5e")
             or (c.calibration == "b200" and c.path in ("bandwidth", "gemm.bf16"))
             or (c.calibration == "gb200" and c.path != "compute.bf16" and c.path != "compute.fp8")]
    assert {c.origin for c in added} == {
        "github:mag-/gpu_benchmark", "github:binbinsh/gpu-bench", "github:pc2/gpuinspector.jl",
        "github:azure/ai-benchmarking-guide", "github:te42kyfo/gpu-benches",
        "github:baidu-research/deepbench", "github:zzc0721/torch-performance-test-data",
        "github:chsasank/device-benchmarks", "github:antirez/ds4", "github:infinigence/apxinf",
        "github:huggingface/kernels", "github:aikitoria/open-gpu-kernel-modules",
        "github:jax-ml/jax", "github:nvidia/cccl", "github:vllm-project/vllm",
        "github:pytorch/ao"}
    shared = {c.origin for c in added} & case_origins
    # vLLM's repository is a source of load cases too (PR 23151's baseline, on an H100):
    # leaving it out removes its L40S FP8 figure for them, which they do not run on
    assert shared == {"github:vllm-project/vllm"}
    users = [c for c in cases if origin(c.source.url) in shared]
    assert users and all(getattr(c, "device", None) != "l40s" for c in users)


def test_show_ends_with_the_calibrated_basis(capsys):
    from roofkit.testing import run_cli

    code, out, _ = run_cli(capsys, "show", "mi250x")
    last = out.strip().splitlines()[-1]
    assert code == 0 and last.startswith("calibrated basis: no calibration for mi250x")
    assert "datasheet only" in last
    code, out, _ = run_cli(capsys, "show", "rtx-4090", "--json")
    basis = json.loads(out)["calibrated_basis"]
    assert basis.startswith("measured achievable for rtx-4090") and "bandwidth" in basis


# zzc0721/torch-performance-test-data database.md (torch.mm, square n = 1024 .. 10240, best n)
@pytest.mark.parametrize(("device", "slot", "tflops", "sheet_tflops"), [
    ("rtx-5090", "bf16", 240.05, 209.6), ("rtx-5090", "fp16", 234.63, 209.6),
    ("rtx-5090", "fp32", 70.47, 104.8),
    ("m3-max", "fp16", 12.84, 14.3), ("m3-max", "fp32", 11.50, 14.3),
    ("jetson-orin-nano-8gb", "bf16", 10.91, 16.75), ("jetson-orin-nano-8gb", "fp16", 10.18, 16.75),
    ("jetson-orin-nano-8gb", "fp32", 1.31, 2.09),
])
def test_torch_mm_sweep_peaks_of_the_edge_and_desktop_devices(registry, device, slot, tflops,
                                                              sheet_tflops):
    _measured_peak(registry, device, slot, tflops, sheet_tflops)


def _measured_peak(registry, device, slot, tflops, sheet_tflops):
    """The calibrated peak of ``slot`` is the cited figure, the datasheet's stays its own."""
    dev = registry.device(device)
    roof = device_roofline(dev, "calibrated", registry)
    assert dev.compute[slot] == pytest.approx(sheet_tflops * 1e12)
    assert roof.peaks[slot] == pytest.approx(tflops * 1e12)
    assert roof.provenance[f"compute.{slot}"].startswith(f"calibration {device}")
    return dev, roof


def test_the_rtx_5090_bf16_sweep_sets_its_size_curve(registry):
    roof = device_roofline(registry.device("rtx-5090"), "calibrated", registry)
    # issue #96: 94.16 TFLOP/s at 1024^3 over the sweep's best, 240.05 at 10240^3
    assert roof.efficiency("bf16", 2.0 * 1024**3) == pytest.approx(94.16 / 240.05)
    assert roof.matmul_rate("bf16", 2.0 * 10240**3) == pytest.approx(240.05e12)
    # above the 209.6 TFLOP/s stated at the 2407 MHz rated boost: 240.05 / 209.6 = 1.145
    assert roof.peaks["bf16"] / registry.device("rtx-5090").compute["bf16"] == \
        pytest.approx(1.145, abs=1e-3)
    assert roof.basis.endswith("datasheet ceiling kept for compute.fp8, compute.fp4; "
                               "host: measured kernel launch")


@pytest.mark.parametrize(("device", "gbs", "sheet_gbs", "share"), [
    # p2pBandwidthLatencyTest diagonal (intra-GPU copy, read + write): 1528.91 / 1792
    ("rtx-5090", 1528.91, 1792.0, 0.853),
    ("m3-max", 318.0, 400.0, 0.795),  # tensor copy_, read + write counted: 318 / 400
    ("dgx-spark", 231.0, 273.0, 0.846),  # read-only kernel, low end of 231-234: 231 / 273
    ("jetson-agx-orin-64gb", 152.8, 204.8, 0.746),  # read past L2 (2 GB): 152.8 / 204.8
])
def test_measured_bandwidths_of_the_unified_memory_devices(registry, device, gbs, sheet_gbs,
                                                           share):
    dev = registry.device(device)
    roof = device_roofline(dev, "calibrated", registry)
    assert dev.memory.bandwidth == pytest.approx(sheet_gbs * 1e9)
    assert roof.bandwidth == pytest.approx(gbs * 1e9) and roof.bandwidth_measured
    assert roof.bandwidth / dev.memory.bandwidth == pytest.approx(share, abs=1e-3)


@pytest.mark.parametrize(("device", "slot", "tflops", "sheet_tflops"), [
    # infinigence/ApxInf PR #74: low ends of 33.4-34.1 (cuBLAS BF16) and 4.8-5.2 (FP32 FMA)
    ("jetson-agx-orin-64gb", "bf16", 33.4, 42.5), ("jetson-agx-orin-64gb", "fp32", 4.8, 5.3),
    # huggingface/kernels GB10 guide: BF16 matmul 2048^3 (peak observed), FP32 matmul 4096^3
    ("dgx-spark", "bf16", 92.3, 125.0), ("dgx-spark", "fp32", 16.4, 31.0),
])
def test_measured_matmul_of_the_unified_memory_devices(registry, device, slot, tflops,
                                                        sheet_tflops):
    dev, roof = _measured_peak(registry, device, slot, tflops, sheet_tflops)
    assert roof.peaks[slot] < dev.compute[slot]
    # fp16 stands for bf16 where the datasheet lists equal peaks
    assert roof.peaks["fp16"] == roof.peaks["bf16"]


def test_the_dgx_spark_keeps_its_fp8_and_fp4_datasheet_ceilings(registry):
    dev = registry.device("dgx-spark")
    roof = device_roofline(dev, "calibrated", registry)
    sheet = device_roofline(dev, "datasheet", registry)
    assert roof.peaks["fp8"] == sheet.peaks["fp8"] and roof.peaks["fp4"] == sheet.peaks["fp4"]
    assert roof.basis.endswith("datasheet ceiling kept for compute.fp8, compute.fp4; "
                               "host: measured kernel launch")


def test_the_orin_nano_notes_check_the_625_mhz_arithmetic(registry):
    cal = registry.catalogues["calibration"]["jetson-orin-nano-8gb"]
    # 32 tensor cores x 256 FMA/clk x 2 FLOP x 0.625 GHz = 10.24 TFLOP/s; 10.91 / 10.24 = 1.065
    peak_625 = 32 * 256 * 2 * 0.625e9
    assert cal.compute["bf16"].value / peak_625 == pytest.approx(1.065, abs=1e-3)
    assert "power mode not stated" in cal.compute["bf16"].notes.lower()


DOC = Path(__file__).resolve().parents[1] / "docs" / "calibrated-devices.md"


@pytest.mark.parametrize(("label", "device"), [
    ("RTX 5090", "rtx-5090"), ("M3 Max", "m3-max"), ("Jetson Orin Nano", "jetson-orin-nano-8gb"),
    ("DGX Spark", "dgx-spark"), ("Jetson AGX Orin 64GB", "jetson-agx-orin-64gb"),
    ("TPU v5e", "tpu-v5e"),
])
def test_the_doc_table_of_what_the_new_calibrations_move_is_current(registry, label, device):
    row = next(r for r in DOC.read_text().splitlines() if r.startswith(f"| {label} | ")
               and "->" in r)
    nums = [float(x) for x in re.findall(r"([0-9.]+) -> ([0-9.]+) ms", row)[0]
            + re.findall(r"([0-9.]+) -> ([0-9.]+) ms", row)[1]]
    got = []
    for basis in ("datasheet", "calibrated"):
        got.append(roofkit.decode("llama-3.2-1b", device, batch=1, context=1024, basis=basis,
                                  registry=registry).time * 1e3)
    for basis in ("datasheet", "calibrated"):
        got.append(roofkit.prefill("llama-3.2-1b", device, tokens=2048, basis=basis,
                                   registry=registry).time * 1e3)
    assert got == pytest.approx(nums, abs=0.051)


def test_the_tpu_v5e_xla_matmul_sets_its_peak_and_size_curve(registry):
    dev = registry.device("tpu-v5e")
    roof = device_roofline(dev, "calibrated", registry)
    # Pallas matmul guide, jnp.matmul bf16: 181.82 TFLOP/s at 8192^3 = 92.3 % of 197
    assert roof.peaks["bf16"] == pytest.approx(181.82e12)
    assert roof.peaks["bf16"] / dev.compute["bf16"] == pytest.approx(0.923, abs=1e-3)
    assert roof.efficiency("bf16", 2.0 * 1024**3) == pytest.approx(17.98 / 181.82)
    assert roof.matmul_rate("bf16", 2.0 * 4096**3) == pytest.approx(166.13e12)
    assert not roof.bandwidth_measured and roof.bandwidth == dev.memory.bandwidth
    assert "datasheet ceiling kept for bandwidth, compute.int8" in roof.basis


def test_the_b200_bf16_sweep_sets_its_size_curve(registry):
    # pytorch/ao PR #2427, 'NVIDIA B200', torch.bfloat16 kernel time, TFLOP/s at n^3
    published = {1024: 423, 1536: 921, 2048: 1130, 3072: 1510, 4096: 1410, 6144: 1450, 8192: 1420}
    cal = registry.catalogues["calibration"]["b200"]
    assert {k: v / 1e12 for k, v in cal.gemm["bf16"].throughput.items()} == pytest.approx(
        {f"{n}x{n}x{n}": tf for n, tf in published.items()})
    # the printed rate is the printed time's: 2 x 1024^3 / 5.08e-6 s = 422.7 TFLOP/s
    assert pytest.approx(423, abs=0.5) == 2 * 1024**3 / 5.08e-6 / 1e12
    roof = device_roofline(registry.device("b200"), "calibrated", registry)
    # smallest shape over the sweep's best: 423 / 1510 = 0.2801
    assert roof.efficiency("bf16", 2.0 * 1024**3) == pytest.approx(0.2801, abs=1e-4)
    # the best row runs at the MAMF peak; the 8192^3 row at 1420 / 1510 of it = 1641 TFLOP/s
    assert roof.matmul_rate("bf16", 2.0 * 3072**3) == pytest.approx(1745.0e12)
    assert roof.matmul_rate("bf16", 2.0 * 8192**3) == pytest.approx(1641.0e12, rel=1e-3)
