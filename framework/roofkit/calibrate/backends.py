"""The devices ``roofkit calibrate`` can measure: the host CPU through numpy, GPUs through
torch or cupy (optional imports: installed only where a GPU is).

A backend gives timed operations as ``run(inner) -> seconds`` callables (``inner`` calls of
the operation, finished: a GPU backend times them with device events and waits for them):
``copy(S)``, ``triad(S)`` (S bytes per array), ``matmul(M, N, K, slot)``, ``launch()`` (the
host cost of one tiny kernel, back to back), ``allreduce(S)`` over every visible device;
and what it is: ``name``, ``kind`` (cpu or gpu), ``slots`` it measures, ``devices``,
``label()``, ``versions()``, ``memory_capacity()``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import platform
import subprocess
import time

from ..errors import RoofkitError


class CalibrateError(RoofkitError, RuntimeError):
    """A backend cannot run here (its library is missing, it sees no device)."""


def _import(name: str, hint: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        raise CalibrateError(f"the {name} backend needs {name}, which is not installed; "
                             f"{hint}") from None


def _wall(fn, sync=None):
    def run(inner: int) -> float:
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        if sync is not None:
            sync()
        return time.perf_counter() - t0
    return run


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``, else ``platform.processor()``)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_memory() -> float | None:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


class NumpyBackend:
    """The host CPU through numpy: fp64 and fp32 GEMMs through its BLAS.

    numpy has no fused triad, so ``triad`` runs STREAM's Add, ``a = b + c``: the same three
    arrays of traffic in one pass.
    """

    name = "numpy"
    kind = "cpu"
    slots = ("fp32", "fp64")
    devices = 1
    def __init__(self, np=None):
        self.np = np or _import("numpy", "pip install numpy")
        self._dtypes = {"fp32": "float32", "fp64": "float64"}

    def element_bytes(self, slot: str) -> float:
        return float(self.np.dtype(self._dtypes[slot]).itemsize)

    def copy(self, size: int):
        a = self.np.ones(size // 8)
        b = self.np.empty_like(a)
        return _wall(lambda: self.np.copyto(b, a))

    def triad(self, size: int):
        b, c = self.np.ones(size // 8), self.np.ones(size // 8)
        a = self.np.empty_like(b)
        return _wall(lambda: self.np.add(b, c, out=a))

    def matmul(self, m: int, n: int, k: int, slot: str):
        dt = self._dtypes[slot]
        rng = self.np.random.default_rng(0)
        a = rng.standard_normal((m, k)).astype(dt)
        b = rng.standard_normal((k, n)).astype(dt)
        c = self.np.empty((m, n), dtype=dt)
        return _wall(lambda: self.np.matmul(a, b, out=c))

    def launch(self):
        x, y = self.np.ones(1), self.np.ones(1)
        z = self.np.empty(1)
        return _wall(lambda: self.np.add(x, y, out=z))

    def allreduce(self, size: int):  # pragma: no cover - one device
        raise CalibrateError("the numpy backend measures one device")

    def label(self) -> str:
        return f"{cpu_model()} ({os.cpu_count()} logical CPUs)"

    def versions(self) -> dict[str, str]:
        out = {"numpy": self.np.__version__}
        try:
            cfg = self.np.show_config(mode="dicts")
            blas = (cfg or {}).get("Build Dependencies", {}).get("blas", {})
            if blas:
                out["blas"] = f"{blas.get('name', '')} {blas.get('version', '')}".strip()
        except (TypeError, AttributeError, ValueError):
            pass
        return out

    def memory_capacity(self) -> float | None:
        return host_memory()


def _driver_version() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10, check=False)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout else ""
    except (OSError, subprocess.SubprocessError, IndexError):
        return ""


class TorchBackend:
    """A GPU through PyTorch (CUDA or ROCm): fp32 (TF32 off), tf32, bf16, fp16, and fp8
    (``torch._scaled_mm``) and int8 (``torch._int_mm``) where the build has them; device
    events time each run; all-reduce through ``torch.cuda.nccl`` over every visible GPU."""

    name = "torch"
    kind = "gpu"

    def __init__(self, torch=None, index: int = 0):
        self.torch = torch or _import("torch", "pip install torch (a CUDA or ROCm build)")
        if not self.torch.cuda.is_available():
            raise CalibrateError("torch sees no CUDA or ROCm device; the torch backend "
                                 "measures a GPU (use --backend numpy for the host CPU)")
        self.index = index
        self.dev = self.torch.device("cuda", index)
        self.devices = int(self.torch.cuda.device_count())
        slots = ["fp32", "tf32", "bf16", "fp16"]
        if hasattr(self.torch, "float8_e4m3fn") and hasattr(self.torch, "_scaled_mm"):
            slots.append("fp8")
        if hasattr(self.torch, "_int_mm"):
            slots.append("int8")
        self.slots = tuple(slots)

    def _dtype(self, slot):
        t = self.torch
        return {"fp32": t.float32, "tf32": t.float32, "bf16": t.bfloat16, "fp16": t.float16,
                "fp8": getattr(t, "float8_e4m3fn", None), "int8": t.int8}[slot]

    def element_bytes(self, slot: str) -> float:
        return {"fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}[slot]

    def _events(self, fn):
        t = self.torch

        def run(inner: int) -> float:
            start = t.cuda.Event(enable_timing=True)
            end = t.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3  # ms -> s
        return run

    def copy(self, size: int):
        a = self.torch.ones(size // 4, dtype=self.torch.float32, device=self.dev)
        b = self.torch.empty_like(a)
        return self._events(lambda: b.copy_(a))

    def triad(self, size: int):
        t = self.torch
        b = t.ones(size // 4, dtype=t.float32, device=self.dev)
        c = t.ones_like(b)
        a = t.empty_like(b)
        return self._events(lambda: t.add(b, c, alpha=3.0, out=a))

    def matmul(self, m: int, n: int, k: int, slot: str):
        t = self.torch
        t.backends.cuda.matmul.allow_tf32 = slot == "tf32"
        if slot == "fp8":
            a = t.randn(m, k, device=self.dev).to(t.float8_e4m3fn)
            b = t.randn(n, k, device=self.dev).to(t.float8_e4m3fn).t()
            one = t.ones((), device=self.dev)
            return self._events(lambda: t._scaled_mm(a, b, scale_a=one, scale_b=one,
                                                     out_dtype=t.bfloat16))
        if slot == "int8":
            a = t.randint(-8, 8, (max(m, 17), k), dtype=t.int8, device=self.dev)
            b = t.randint(-8, 8, (k, n), dtype=t.int8, device=self.dev)
            return self._events(lambda: t._int_mm(a, b))
        dt = self._dtype(slot)
        a = t.randn(m, k, device=self.dev, dtype=dt)
        b = t.randn(k, n, device=self.dev, dtype=dt)
        return self._events(lambda: t.matmul(a, b))

    def launch(self):
        x = self.torch.zeros(1, device=self.dev)
        return _wall(lambda: x.add_(1.0), self.torch.cuda.synchronize)

    def allreduce(self, size: int):
        t = self.torch
        xs = [t.ones(size // 4, dtype=t.float32, device=t.device("cuda", i))
              for i in range(self.devices)]

        def sync():
            for i in range(self.devices):
                t.cuda.synchronize(i)
        return _wall(lambda: t.cuda.nccl.all_reduce(xs), sync)

    def label(self) -> str:
        return f"{self.torch.cuda.get_device_name(self.index)} (x{self.devices} visible)"

    def versions(self) -> dict[str, str]:
        t = self.torch
        out = {"torch": str(t.__version__)}
        for key in ("cuda", "hip"):
            v = getattr(t.version, key, None)
            if v:
                out[key] = str(v)
        driver = _driver_version()
        if driver:
            out["driver"] = driver
        return out

    def memory_capacity(self) -> float | None:
        return float(self.torch.cuda.get_device_properties(self.index).total_memory)


class CupyBackend:
    """A GPU through CuPy: fp64, fp32 and fp16 GEMMs (cuBLAS), a fused triad kernel, CUDA
    events; all-reduce through ``cupy.cuda.nccl`` over every visible GPU."""

    name = "cupy"
    kind = "gpu"
    slots = ("fp32", "fp16", "fp64")

    def __init__(self, cupy=None, index: int = 0):
        self.cp = cupy or _import("cupy", "pip install cupy-cuda12x (or the build for your CUDA)")
        try:
            self.devices = int(self.cp.cuda.runtime.getDeviceCount())
        except Exception as exc:  # CUDARuntimeError: no driver or no device
            raise CalibrateError(f"cupy sees no CUDA device ({exc})") from None
        if self.devices < 1:
            raise CalibrateError("cupy sees no CUDA device")
        self.index = index
        self.cp.cuda.Device(index).use()

    def element_bytes(self, slot: str) -> float:
        return {"fp32": 4.0, "fp16": 2.0, "fp64": 8.0}[slot]

    def _events(self, fn):
        cp = self.cp

        def run(inner: int) -> float:
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            return cp.cuda.get_elapsed_time(start, end) / 1e3
        return run

    def copy(self, size: int):
        a = self.cp.ones(size // 4, dtype=self.cp.float32)
        b = self.cp.empty_like(a)
        return self._events(lambda: self.cp.copyto(b, a))

    def triad(self, size: int):
        cp = self.cp
        kernel = cp.ElementwiseKernel("T b, T c, T s", "T a", "a = b + s * c", "roofkit_triad")
        b = cp.ones(size // 4, dtype=cp.float32)
        c = cp.ones_like(b)
        a = cp.empty_like(b)
        s = cp.float32(3.0)
        return self._events(lambda: kernel(b, c, s, a))

    def matmul(self, m: int, n: int, k: int, slot: str):
        cp = self.cp
        dt = {"fp32": cp.float32, "fp16": cp.float16, "fp64": cp.float64}[slot]
        a = cp.ones((m, k), dtype=dt)
        b = cp.ones((k, n), dtype=dt)
        return self._events(lambda: cp.matmul(a, b))

    def launch(self):
        x = self.cp.zeros(1, dtype=self.cp.float32)
        return _wall(lambda: x.__iadd__(1.0), self.cp.cuda.Device(self.index).synchronize)

    def allreduce(self, size: int):
        cp = self.cp
        nccl = cp.cuda.nccl
        comms = nccl.NcclCommunicator.initAll(list(range(self.devices)))
        bufs = []
        for i in range(self.devices):
            with cp.cuda.Device(i):
                bufs.append(cp.ones(size // 4, dtype=cp.float32))

        def once():
            nccl.groupStart()
            for i, (comm, x) in enumerate(zip(comms, bufs, strict=True)):
                with cp.cuda.Device(i):
                    comm.allReduce(x.data.ptr, x.data.ptr, x.size, nccl.NCCL_FLOAT32,
                                   nccl.NCCL_SUM, cp.cuda.get_current_stream().ptr)
            nccl.groupEnd()

        def sync():
            for i in range(self.devices):
                cp.cuda.Device(i).synchronize()
        return _wall(once, sync)

    def label(self) -> str:
        props = self.cp.cuda.runtime.getDeviceProperties(self.index)
        name = props.get("name", b"GPU")
        name = name.decode() if isinstance(name, bytes) else str(name)
        return f"{name} (x{self.devices} visible)"

    def versions(self) -> dict[str, str]:
        out = {"cupy": str(self.cp.__version__),
               "cuda_runtime": str(self.cp.cuda.runtime.runtimeGetVersion())}
        with contextlib.suppress(Exception):  # optional: a runtime without the call
            out["driver"] = str(self.cp.cuda.runtime.driverGetVersion())
        return out

    def memory_capacity(self) -> float | None:
        props = self.cp.cuda.runtime.getDeviceProperties(self.index)
        return float(props.get("totalGlobalMem", 0)) or None


BACKENDS = {"numpy": NumpyBackend, "torch": TorchBackend, "cupy": CupyBackend}


def backend(name: str, **kw):
    """The backend called ``name`` (numpy, torch, cupy), constructed."""
    try:
        cls = BACKENDS[name]
    except KeyError:
        raise CalibrateError(f"unknown calibrate backend {name!r}; one of "
                             f"{', '.join(BACKENDS)}") from None
    return cls(**kw)
