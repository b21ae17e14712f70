"""``roofkit calibrate``: measure the device you have and write its calibration.

``calibrate(backend, out=DIR)`` runs :func:`.measure.measure` on a backend (numpy for the
host CPU; torch or cupy for a GPU, when installed) and writes ``DIR/calibration/<name>.toml``,
a calibration spec with provenance (host, backend and library versions, date, command); for a
device no catalogue holds (the host CPU) also ``DIR/devices/<name>.toml``. ``--spec-path
DIR`` then layers them over the builtin catalogue, and the calibrated basis uses them.
"""

from __future__ import annotations

import datetime as _dt
import platform
import re
import shlex
import sys
from pathlib import Path

import attrs

from .backends import BACKENDS, CalibrateError, backend
from .measure import Results, Settings, measure
from .write import calibration_toml, device_toml

__all__ = ["BACKENDS", "CalibrateError", "Calibrated", "Results", "Settings", "calibrate"]


@attrs.frozen
class Calibrated:
    """What a run measured and wrote: the results, the TOML texts and the paths."""

    name: str
    device: str
    results: Results
    calibration: str
    device_spec: str | None
    paths: tuple[Path, ...] = ()

    def to_dict(self) -> dict:
        r = self.results
        return {"name": self.name, "device": self.device,
                "bandwidth_B_per_s": r.bandwidth,
                "copy_B_per_s": {str(k): v for k, v in r.copy.items()},
                "triad_B_per_s": {str(k): v for k, v in r.triad.items()},
                "peak_FLOP_per_s": {s: r.peak(s) for s in r.gemm},
                "gemm_FLOP_per_s": r.gemm, "launch_s": r.launch,
                "allreduce_bus_B_per_s": {str(k): v for k, v in r.allreduce.items()},
                "paths": [str(p) for p in self.paths]}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "local"


#: a spec key the calibration may be written under (also its file name)
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _check_out(root: Path) -> None:
    """``root`` and its ``calibration``/``devices`` subfolders are folders or can be made:
    refused before a minute of measurement, not after."""
    from ..errors import ArgumentError

    for p in (root, root / "calibration", root / "devices"):
        if p.exists() and not p.is_dir():
            raise ArgumentError(f"--out {str(root)!r}: {str(p)!r} is a file, not a folder; "
                                "give --out a folder (it is created if missing)")
    parent = next((q for q in (root, *root.parents) if q.exists()), None)
    if parent is not None and not parent.is_dir():
        raise ArgumentError(f"--out {str(root)!r}: {str(parent)!r} is a file, not a folder")


def calibrate(backend_name: str = "numpy", *, quick: bool = False, device: str | None = None,
              name: str | None = None, out: str | Path | None = None,
              category: str = "workstation", command: str | None = None, registry=None,
              log=lambda s: None, backend_obj=None) -> Calibrated:
    """Measure with ``backend_name`` and write the specs under ``out`` (None: write nothing).

    ``device`` names a catalogued device the measurement is of (a GPU: ``h100-sxm``); the
    calibration is then named like the builtin one for it, so a ``--spec-path`` layer
    replaces it. Without ``device`` a device spec is written too (``name``, default
    ``local-cpu`` or ``local-gpu``). ``backend_obj`` is a constructed backend (tests).
    """
    # the names first: a typo must not cost a minute of measurement before its error
    if name is not None and not (isinstance(name, str) and _KEY.fullmatch(name)):
        from ..errors import ArgumentError, shown

        raise ArgumentError(f"name must be a spec key of letters, digits, '.', '_' and '-' "
                            f"(at most 64 characters, e.g. 'my-gpu'), got {shown(name, 80)}")
    dev_key = _device_key(device, registry) if device is not None else None
    if out is not None:
        _check_out(Path(out))
    be = backend_obj or backend(backend_name)
    settings = Settings.for_backend(be.kind, quick)
    res = measure(be, settings, log=log)
    label = be.label()
    when = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    cmd = command or " ".join(shlex.quote(a) for a in ["roofkit", *sys.argv[1:]])
    versions = {"python": platform.python_version(), **be.versions()}
    from .. import __version__
    versions["roofkit"] = __version__
    prov = {"command": cmd, "date": when,
            "host": f"{platform.node()}: {label}; {platform.platform()}",
            "backend": be.name + (" (quick)" if quick else ""),
            "versions": ", ".join(f"{k} {v}" for k, v in versions.items())}
    source = f"roofkit calibrate --backend {be.name} ({when})"
    replaces = ""
    if device is not None:
        cal_name = name or _calibration_name(dev_key, registry)
        dev_text = None
        from ..registry import default_registry

        reg = registry if registry is not None else default_registry()
        if cal_name in reg.catalogues["calibration"]:
            replaces = cal_name  # the catalogued calibration of this device
    else:
        dev_key = name or f"local-{be.kind}"
        cal_name = dev_key
        dev_text = device_toml(dev_key, label, res, be.memory_capacity(), cal_name, category)
    cal_text = calibration_toml(cal_name, dev_key, label, res, source, prov,
                                notes=f"settings: {attrs.asdict(settings)}",
                                overrides=replaces)
    paths: list[Path] = []
    if out is not None:
        root = Path(out)
        files = [("calibration", cal_name, cal_text), ("devices", dev_key, dev_text)]
        for folder, key, text in files:
            if text is None:
                continue
            p = root / folder / f"{key}.toml"
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text)
            except OSError as exc:
                from ..errors import ArgumentError

                raise ArgumentError(f"cannot write {str(p)!r}: {exc.strerror or exc}; give "
                                    "--out a folder you can write") from None
            paths.append(p)
    return Calibrated(cal_name, dev_key, res, cal_text, dev_text, tuple(paths))


def _device_key(device: str, registry) -> str:
    from ..registry import resolve

    return resolve(registry).device(device).name


def _calibration_name(device: str, registry) -> str:
    """The builtin calibration's name for ``device`` (so a layer replaces it), else its key."""
    from ..registry import resolve

    cat = getattr(resolve(registry), "catalogues", {}).get("calibration")
    for key in cat or ():
        if getattr(cat[key], "device", None) == device:
            return key
    return _slug(device)
