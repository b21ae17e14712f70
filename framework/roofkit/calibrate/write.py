"""The TOML ``roofkit calibrate`` writes: a calibration spec (the schema of
``specs/calibration/*.toml``) whose sources say ``roofkit calibrate`` and whose
``[provenance]`` records the run; for a device the catalogue lacks (the host CPU), a device
spec whose ceilings are the measured ones, each sourced to that calibration."""

from __future__ import annotations

import json

from .measure import Results


def _q(text: str) -> str:
    return json.dumps(text)  # a TOML basic string is a JSON string


def _rate(value: float, unit: str) -> str:
    return _q(f"{value / 1e9:.6g} G{unit}")


def _table(entries: dict[str, str]) -> str:
    return "{ " + ", ".join(f"{_q(k)} = {v}" for k, v in entries.items()) + " }"


def calibration_toml(name: str, device: str, display: str, res: Results, source: str,
                     provenance: dict[str, str], notes: str = "", overrides: str = "") -> str:
    """The calibration spec of ``device`` measured as ``res``; ``overrides`` names the
    catalogued calibration it replaces (a layer replaces a spec only when it says so)."""
    lines = [f"# {display}: measured by roofkit calibrate (see [provenance]).",
             f"name = {_q(name)}", f"display_name = {_q(display + ', measured')}",
             f"device = {_q(device)}"]
    if overrides:
        lines.append(f"overrides = {_q(overrides)}")
    if notes:
        lines.append(f"notes = {_q(notes)}")
    curve = "; ".join(f"{s / 2**20:g} MiB copy {res.copy[s] / 1e9:.4g} triad "
                      f"{res.triad[s] / 1e9:.4g}" for s in sorted(res.triad))
    top = max(res.triad)
    lines += ["", "[bandwidth]", f"value = {_rate(res.bandwidth, 'B/s')}",
              f"source = {_q(source)}",
              f"where = {_q(f'triad at {top / 2**20:g} MiB per array (the largest size)')}",
              f"notes = {_q('GB/s by size per array: ' + curve)}"]
    for slot, rates in res.gemm.items():
        best = max(rates, key=rates.get)
        lines += ["", f"[compute.{slot}]", f"value = {_rate(rates[best], 'FLOP/s')}",
                  f"source = {_q(source)}", f"where = {_q(f'best square GEMM, {best}')}"]
        lines += ["", f"[gemm.{slot}]", f"source = {_q(source)}",
                  f"where = {_q('square GEMMs, median of the samples')}",
                  "throughput = " + _table({k: _rate(v, "FLOP/s") for k, v in rates.items()})]
    for slot, (shape, rate, elem) in res.mixed.items():
        lines += ["", f"[mixed.{slot}]", f"source = {_q(source)}",
                  f"where = {_q('M x n x n with n = element bytes x peak / bandwidth')}",
                  f"shape = {_q(shape)}", f"throughput = {_rate(rate, 'FLOP/s')}",
                  f"a_bytes = {elem}", f"b_bytes = {elem}", f"c_bytes = {elem}"]
    lines += ["", "[launch.kernel]", f"value = {_q(f'{res.launch * 1e6:.4g} us')}",
              f"source = {_q(source)}",
              f"where = {_q('a one-element add, back to back, host wall time per call')}"]
    if res.allreduce:
        lines += ["", f"[allreduce.measured-{res.devices}]", 'algorithm = "measured"',
                  f"devices = {res.devices}", f"source = {_q(source)}",
                  f"where = {_q('all-reduce over every visible device, busbw per size')}",
                  "bus_bandwidth = " + _table({str(k): _rate(v, "B/s")
                                               for k, v in sorted(res.allreduce.items())})]
    lines += ["", "[provenance]", *(f"{k} = {_q(v)}" for k, v in provenance.items())]
    return "\n".join(lines) + "\n"


def device_toml(name: str, display: str, res: Results, capacity: float | None,
                calibration: str, category: str) -> str:
    """A device spec for a device no catalogue holds: its peaks and bandwidth are the
    measured ones (nothing else is published for it), each sourced to the calibration."""
    slots = list(res.gemm)
    default = "fp32" if "fp32" in slots else slots[0]
    lines = [f"# {display}: written by roofkit calibrate; every figure is measured (see the",
             f"# calibration {calibration!r}), no datasheet exists for this machine.",
             f"name = {_q(name)}", f"display_name = {_q(display)}", f"category = {_q(category)}",
             f"default_slot = {_q(default)}", "", "[compute]",
             *(f"{slot} = {_rate(res.peak(slot), 'FLOP/s')}" for slot in slots), "",
             "[memory]", f"capacity = {_q(f'{(capacity or 0) / 1e9:.6g} GB')}",
             f"bandwidth = {_rate(res.bandwidth, 'B/s')}", "", "[overheads]",
             'dispatch = "0 us"', 'layer = "0 us"',
             f"launch = {_q(f'{res.launch * 1e6:.4g} us')}", "", "[sources]",
             f"calibration = {_q(f'roofkit calibrate: calibration {calibration}')}",
             f"os = {_q('the operating system: physical memory pages x page size')}",
             f"modeling = {_q('a library call has no separate step dispatch or layer term')}",
             "", "[provenance]",
             *(f"{_q(f'compute.{s}')} = {_q(f'calibration: best square GEMM of gemm.{s}')}"
               for s in slots),
             f"{_q('memory.capacity')} = {_q('os: physical memory')}",
             f"{_q('memory.bandwidth')} = {_q('calibration: triad at the largest size')}",
             f"{_q('overheads.dispatch')} = {_q('modeling')}",
             f"{_q('overheads.layer')} = {_q('modeling')}",
             f"{_q('overheads.launch')} = {_q('calibration: launch.kernel')}"]
    return "\n".join(lines) + "\n"
