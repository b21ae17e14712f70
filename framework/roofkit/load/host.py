"""An engine profile's host time per step, tabulated by the step's sequence count.

    eager step:  host(b) = dispatch(b) + K * launch        (every kernel launched)
    graph step:  host(b) = dispatch(b) + graph_launch      (a captured decode batch replays)

``K`` is the plan's kernel count and ``launch`` the roofline's kernel launch (serve's
host-dispatch arithmetic); ``graph_launch`` the host calibration's ``launch.graph``.
``dispatch(b)`` is the engine's measured step time at ``b`` sequences (the host calibration
profile it names, interpolated linearly, extended linearly below its measured batches and
held at the largest measured batch's value above them (a component marked ``above =
"linear"`` extended along its last two points), as ``roofkit serve --engine`` does,
and reported when a run leaves that range), else the
launch-and-wait round trip ``launch.kernel_sync`` (calibrated basis) or the device spec's
``overheads.dispatch`` (datasheet basis): what ``roofkit serve`` charges without an engine.
"""

from __future__ import annotations

import attrs
import numpy as np

from ..circuit.roofline import host_calibration
from ..serving import overhead as _overhead


@attrs.frozen(eq=False)
class HostTable:
    eager: list
    graph: list
    measured: tuple[int, int] | None  # the batch range the engine's host time was measured at
    source: str
    overlap: bool = False
    above: str = "held at its largest measured batch's value above"


def host_table(engine, roofline, registry, kernels: int, max_seqs: int) -> HostTable:
    """Host seconds per step for 0..max_seqs sequences (``engine`` an EngineSpec or None)."""
    host = host_calibration(registry)
    b = np.arange(0, max_seqs + 1, dtype=float)
    measured = None
    above = "held at its largest measured batch's value above"
    calibrated = roofline.name == "calibrated"
    h = engine.host if engine is not None else None
    if h is not None and calibrated and (h.calibration or h.by_batch):
        if h.calibration:
            prof = _overhead.engine_profile(host, h.calibration)
            measured = _overhead.measured_range(prof)
            dispatch = _overhead.engine_step_times(prof, np.maximum(b, 1.0))
            above = _overhead.above_text(prof)
            source = (f"engine {engine.name}: host calibration {h.calibration!r} "
                      f"({_overhead.profile_sources(prof)})")
        else:
            keys = sorted(int(k) for k in h.by_batch)
            measured = (keys[0], keys[-1]) if len(keys) > 1 else None
            xs = np.array(keys, dtype=float)
            ys = np.array([h.by_batch[str(k)] for k in keys])
            dispatch = _overhead.interp_linear_array(np.maximum(b, 1.0), xs, ys)
            source = f"engine {engine.name}: {h.source}"
    else:
        step = _overhead.step_overhead(roofline, host, kernels, 1, None)
        dispatch = np.full(b.shape, step.dispatch)
        source = step.source
        if engine is not None:
            source = f"engine {engine.name}: no measured step time; {source}"
    launch = roofline.launch
    graph = host["launch"].get("graph") if calibrated else None
    graph_launch = graph.value if graph is not None else launch
    eager = dispatch + kernels * launch
    return HostTable(eager=eager.tolist(), graph=(dispatch + graph_launch).tolist(),
                     measured=measured, source=source,
                     overlap=bool(h is not None and h.overlap), above=above)
