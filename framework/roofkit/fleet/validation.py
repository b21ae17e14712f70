"""``roofkit validate --kind training``: every case of ``specs/training`` predicted on the
datasheet and the calibrated basis, with the signed error ``(predicted - measured) /
measured`` and, per basis, the median and maximum absolute error of the scored cases.

A case on a device without a calibration file is predicted and listed, not scored (its
calibrated basis is its datasheet); so is a case marked ``unscored``.
"""

from __future__ import annotations

import statistics

import attrs

from ..circuit.roofline import BASES
from ..errors import RoofkitError
from ..progress import iterate
from ..registry import resolve as resolve_registry
from .training import train


@attrs.frozen
class TrainingCaseResult:
    name: str
    workload: str
    cluster: str
    devices: int
    metric: str
    measured: float
    predicted: dict
    scored: bool
    reason: str = ""
    config: str = ""
    fits: bool = True

    def error(self, basis: str) -> float | None:
        p = self.predicted.get(basis)
        return None if p is None else (p - self.measured) / self.measured

    def to_dict(self) -> dict:
        return {"name": self.name, "workload": self.workload, "cluster": self.cluster,
                "devices": self.devices, "metric": self.metric, "config": self.config,
                "measured": self.measured, "scored": self.scored, "reason": self.reason,
                "fits": self.fits,
                **{f"predicted_{b}": self.predicted.get(b) for b in BASES},
                **{f"error_{b}": self.error(b) for b in BASES}}


@attrs.frozen(repr=False)
class TrainingReport:
    cases: tuple

    def errors(self, basis: str) -> list[float]:
        return [abs(c.error(basis)) for c in self.cases
                if c.scored and c.error(basis) is not None]

    def median(self, basis: str) -> float | None:
        e = self.errors(basis)
        return statistics.median(e) if e else None

    def max(self, basis: str) -> float | None:
        e = self.errors(basis)
        return max(e) if e else None

    def summary(self) -> dict:
        return {b: {"median_abs_error": self.median(b), "max_abs_error": self.max(b),
                    "scored": len(self.errors(b))} for b in BASES}

    def to_pandas(self):
        from .report import frame

        return frame([c.to_dict() for c in self.cases])

    def _repr_html_(self) -> str:
        from .report import html_table

        rows = [(c.name, f"measured {c.measured:.4g}, calibrated "
                 f"{c.predicted.get('calibrated', float('nan')):.4g} "
                 f"({'scored' if c.scored else 'listed'})") for c in self.cases]
        return html_table("training validation", rows)

    def to_dict(self) -> dict:
        return {"kind": "training", "cases": [c.to_dict() for c in self.cases],
                "summary": self.summary()}

    def __repr__(self) -> str:
        scored = sum(c.scored for c in self.cases)
        lines = [f"<TrainingReport {len(self.cases)} training cases, {scored} scored"]
        for b, s in self.summary().items():
            med = s["median_abs_error"]
            lines.append(f"  {b:<12} median |error| "
                         f"{'-' if med is None else f'{med:.1%}'} over {s['scored']}")
        return "\n".join(lines) + ">"


def _calibrated(device: str, registry) -> bool:
    cat = registry.catalogues.get("calibration") or {}
    dev = registry.device(device)
    return any(getattr(cat[k], "device", None) in (dev.name, *dev.aliases) for k in cat)


def predict(case, basis: str, registry):
    lo = case.layout
    est = train(case.workload, case.cluster, devices=case.devices, tp=lo.tp, pp=lo.pp,
                vpp=lo.vpp, dp=lo.dp, cp=lo.cp, ep=lo.ep, micro_batch=lo.micro_batch,
                global_batch=lo.global_batch, seq_len=lo.seq_len, precision=lo.precision,
                recompute=lo.recompute, zero=lo.zero, lora=lo.lora or None,
                qlora=(lo.lora if lo.qlora else None), basis=basis, attention=lo.attention,
                dropout=lo.dropout, sequence_parallel=lo.sequence_parallel,
                dp_overlap=lo.dp_overlap, kernels=lo.kernels, lora_targets=lo.lora_targets,
                lora_dropout=lo.lora_dropout, uneven_stages=lo.uneven_stages,
                pp_scatter=lo.pp_scatter, fp32_accumulation=lo.fp32_accumulation,
                registry=registry)
    value = est.step_time_s if case.metric == "step_s" else est.tokens_per_s
    return value, est


def run(registry=None, cases=None) -> TrainingReport:
    registry = resolve_registry(registry)
    cases = cases if cases is not None else list(registry.catalogues["training"].values())
    out = []
    for case in iterate(sorted(cases, key=lambda c: c.name), "validate training"):
        predicted, fits, reason = {}, True, case.unscored
        for basis in BASES:
            try:
                predicted[basis], est = predict(case, basis, registry)
                fits = fits and est.fits
            except RoofkitError as exc:
                reason = reason or f"not predicted: {exc}"
        device = registry.cluster(case.cluster).device
        if not reason and not _calibrated(device, registry):
            reason = f"no calibration for {device}: its calibrated basis is its datasheet"
        lo = case.layout
        config = (f"{case.devices} GPUs tp{lo.tp} pp{lo.pp}"
                  + (f"v{lo.vpp}" if lo.vpp > 1 else "") + f" dp{lo.dp} mb{lo.micro_batch} "
                  f"gb{lo.global_batch} s{lo.seq_len} {lo.precision} rc:{lo.recompute}")
        out.append(TrainingCaseResult(
            name=case.name, workload=case.workload, cluster=case.cluster,
            devices=case.devices, metric=case.metric, measured=case.value,
            predicted=predicted, scored=not reason and len(predicted) == len(BASES),
            reason=reason, config=config, fits=fits))
    return TrainingReport(tuple(out))
