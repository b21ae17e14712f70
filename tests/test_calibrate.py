"""``roofkit calibrate``: the measurements recover a device's constants, the written TOML
loads as a calibration (and device) spec the calibrated basis uses, the numpy backend runs
here, and the GPU backends refuse clearly where they cannot run."""

import json
import types

import numpy as np
import pytest

import roofkit
from roofkit.calibrate import CalibrateError, Settings, calibrate
from roofkit.calibrate.backends import NumpyBackend, TorchBackend
from roofkit.calibrate.measure import measure, median_time
from roofkit.circuit.roofline import device_roofline
from roofkit.testing import run_cli

BW, PEAK, LAUNCH, BUS = 50e9, 2e12, 4e-6, 100e9


class SimulatedBackend:
    """A device whose every operation takes exactly the time its constants say."""

    name = "simulated"
    kind = "gpu"
    slots = ("fp16",)

    def __init__(self, devices=1):
        self.devices = devices

    def element_bytes(self, slot):
        return 2.0

    def copy(self, size):
        return lambda inner: inner * 2 * size / BW

    def triad(self, size):
        return lambda inner: inner * 3 * size / BW

    def matmul(self, m, n, k, slot):
        eff = min(1.0, n / 4096)  # small GEMMs reach less of the peak
        return lambda inner: inner * 2 * m * n * k / (PEAK * eff)

    def launch(self):
        return lambda inner: inner * LAUNCH

    def allreduce(self, size):
        n = self.devices
        return lambda inner: inner * size * 2 * (n - 1) / n / BUS

    def label(self):
        return "Simulated GPU"

    def versions(self):
        return {"simulated": "1.0"}

    def memory_capacity(self):
        return 16e9


def test_median_time_divides_by_the_calls_it_ran():
    assert median_time(lambda inner: inner * 3e-3, 0.01, 3) == pytest.approx(3e-3)


def test_measurements_recover_the_constants():
    res = measure(SimulatedBackend(devices=4), Settings.for_backend("gpu", quick=True))
    assert res.bandwidth == pytest.approx(BW)
    assert all(v == pytest.approx(BW) for v in res.copy.values())
    assert res.gemm["fp16"]["4096x4096x4096"] == pytest.approx(PEAK)
    assert res.gemm["fp16"]["1024x1024x1024"] == pytest.approx(PEAK / 4)
    assert res.launch == pytest.approx(LAUNCH)
    assert res.devices == 4 and all(v == pytest.approx(BUS) for v in res.allreduce.values())
    shape, _, elem = res.mixed["fp16"]
    # n = elem x peak / bandwidth = 2 x 2e12 / 50e9 = 80
    assert shape.endswith("x80x80") and elem == 2.0


def test_an_uncatalogued_device_gets_a_device_spec_the_calibrated_basis_uses(tmp_path):
    run = calibrate(quick=True, out=tmp_path, name="sim-gpu", backend_obj=SimulatedBackend(),
                    command="roofkit calibrate --quick")
    assert {p.name for p in run.paths} == {"sim-gpu.toml"}
    assert (tmp_path / "devices" / "sim-gpu.toml").exists()
    reg = roofkit.build_registry(entry_points=False, spec_paths=[str(tmp_path)])
    cal = reg.catalogues["calibration"]["sim-gpu"]
    assert cal.provenance["command"] == "roofkit calibrate --quick"
    assert {"date", "host", "backend", "versions"} <= set(cal.provenance)
    roof = device_roofline(reg.device("sim-gpu"), "calibrated", reg)
    assert roof.bandwidth == pytest.approx(BW, rel=1e-5)
    assert roof.peaks["fp16"] == pytest.approx(PEAK, rel=1e-5)
    assert roof.launch == pytest.approx(LAUNCH, rel=1e-3)
    assert roof.efficiency("fp16", 2 * 1024 ** 3) == pytest.approx(0.25, rel=1e-4)
    assert "calibration/sim-gpu.toml" in roof.basis


def test_a_catalogued_device_calibration_replaces_the_builtin_one(tmp_path):
    reg0 = roofkit.build_registry(entry_points=False)
    run = calibrate(quick=True, out=tmp_path, device="h100", backend_obj=SimulatedBackend(2),
                    registry=reg0, command="roofkit calibrate --device h100")
    assert run.device == "h100-sxm" and run.device_spec is None
    reg = roofkit.build_registry(entry_points=False, spec_paths=[str(tmp_path)])
    roof = device_roofline(reg.device("h100"), "calibrated", reg)
    assert roof.bandwidth == pytest.approx(BW, rel=1e-5)
    assert "allreduce measured-2" in roof.provenance["interconnect"]


def test_a_local_source_needs_the_provenance(tmp_path):
    run = calibrate(quick=True, name="sim-gpu", backend_obj=SimulatedBackend(),
                    command="roofkit calibrate")
    text = run.calibration.rsplit("[provenance]", 1)[0]
    (tmp_path / "calibration").mkdir()
    (tmp_path / "calibration" / "sim-gpu.toml").write_text(text)
    (tmp_path / "devices").mkdir()
    (tmp_path / "devices" / "sim-gpu.toml").write_text(run.device_spec)
    with pytest.raises(roofkit.SpecError, match=r"\[provenance\] needs command, date, host"):
        roofkit.build_registry(entry_points=False, spec_paths=[str(tmp_path)])


def test_numpy_backend_calibrates_this_cpu(tmp_path, capsys):
    code, out, _ = run_cli(capsys, "calibrate", "--quick", "--out", str(tmp_path), "--json")
    assert code == 0
    d = json.loads(out)
    assert d["device"] == "local-cpu" and d["bandwidth_B_per_s"] > 0
    assert set(d["peak_FLOP_per_s"]) == {"fp32", "fp64"} and d["launch_s"] > 0
    reg = roofkit.build_registry(entry_points=False, spec_paths=[str(tmp_path)])
    dev = reg.device("local-cpu")
    assert dev.memory.bandwidth == pytest.approx(d["bandwidth_B_per_s"], rel=1e-5)
    cal = reg.catalogues["calibration"]["local-cpu"]
    assert "numpy" in cal.provenance["versions"] and cal.provenance["backend"] == "numpy (quick)"


def test_numpy_backend_times_what_it_is_asked():
    be = NumpyBackend()
    assert be.element_bytes("fp32") == 4.0 and be.slots == ("fp32", "fp64")
    assert be.copy(1 << 16)(2) > 0 and be.matmul(8, 8, 8, "fp64")(1) > 0


class _Clock:
    t = 0.0

    @classmethod
    def perf_counter(cls):
        return cls.t


def _fake_torch(cuda=True, devices=2):
    """The slice of torch's surface the torch backend touches; work advances a clock by
    the time the module constants say (the backend's wall timer reads the same clock)."""

    def work(seconds):
        _Clock.t += seconds

    class Event:
        def __init__(self, enable_timing=False):
            self.t = 0.0

        def record(self):
            self.t = _Clock.t

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return (end.t - self.t) * 1e3

    class Tensor:
        def __init__(self, shape):
            self.shape = shape
            self.nbytes = 4 * int(np.prod(shape))

        def copy_(self, other):
            work(2 * other.nbytes / BW)

        def add_(self, v):
            work(LAUNCH)

    def arr(*shape, **_):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        return Tensor(tuple(shape))

    def matmul(a, b):
        work(2 * a.shape[0] * a.shape[1] * b.shape[1] / PEAK)

    def add(b, c, alpha=1.0, out=None):
        work(3 * b.nbytes / BW)

    def all_reduce(xs):
        n = len(xs)
        work(xs[0].nbytes * 2 * (n - 1) / n / BUS)

    cuda_ns = types.SimpleNamespace(
        is_available=lambda: cuda, device_count=lambda: devices, Event=Event,
        synchronize=lambda *a: None, get_device_name=lambda i: "Fake GPU",
        get_device_properties=lambda i: types.SimpleNamespace(total_memory=80e9),
        nccl=types.SimpleNamespace(all_reduce=all_reduce))
    return types.SimpleNamespace(
        __version__="0.0-fake", version=types.SimpleNamespace(cuda="12.0", hip=None),
        cuda=cuda_ns, device=lambda *a: a, float32="f32", bfloat16="bf16", float16="f16",
        int8="i8", ones=arr, zeros=arr, empty_like=lambda a: arr(a.shape),
        ones_like=lambda a: arr(a.shape), randn=arr, add=add, matmul=matmul,
        backends=types.SimpleNamespace(cuda=types.SimpleNamespace(
            matmul=types.SimpleNamespace(allow_tf32=False))))


def test_torch_backend_times_with_device_events_and_reduces_over_every_gpu(monkeypatch):
    import roofkit.calibrate.backends as backends

    monkeypatch.setattr(backends, "time", _Clock)
    be = TorchBackend(torch=_fake_torch(devices=2))
    assert be.slots == ("fp32", "tf32", "bf16", "fp16")  # no fp8 / int8 in this build
    res = measure(be, Settings.for_backend("gpu", quick=True))
    assert res.bandwidth == pytest.approx(BW)
    assert res.peak("bf16") == pytest.approx(PEAK)
    assert res.launch == pytest.approx(LAUNCH)
    assert res.devices == 2 and all(v == pytest.approx(BUS) for v in res.allreduce.values())
    assert be.versions()["cuda"] == "12.0"


def test_torch_backend_refuses_without_a_gpu():
    with pytest.raises(CalibrateError, match="no CUDA or ROCm device"):
        TorchBackend(torch=_fake_torch(cuda=False))


def test_unknown_backend_is_refused():
    with pytest.raises(CalibrateError, match="one of numpy, torch, cupy"):
        calibrate("jax")


def test_calibrate_says_where_to_write(capsys):
    code, _, err = run_cli(capsys, "calibrate", "--quick")
    assert code == 1 and "--out" in err
