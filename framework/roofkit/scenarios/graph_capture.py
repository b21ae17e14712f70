"""Graph capture: the eager step replayed as a captured graph (CUDA graphs, XLA, HIP graphs).

The eager step is a :class:`HostDispatchScenario`. Captured, ``graphs`` graph launches
(default 1) replace its per-operation dispatch and per-kernel launches; each costs
``graph_launch`` (default: one dispatch plus one launch, a Python call that launches once):

    graph_host_time = graphs * graph_launch
    graph_speedup = (host_time + device_time) / (graph_host_time + device_time)
    limit_attained = graph_speedup / speedup_limit
    breakeven_steps = capture_time / (host_time - graph_host_time)

``graph_speedup`` is the gain over eager, shown beside the eager ceiling ``speedup_limit``.
Device time is the same in both: excludes the faster kernels a compiler may also generate,
per-node device-side launch cost inside the graph, and host/device overlap.
"""

from __future__ import annotations

from ..errors import SpecError
from ..units import Q
from .base import count_input, quantity_input, scenario_class
from .host_dispatch import HostDispatchScenario


@scenario_class
class GraphCaptureScenario(HostDispatchScenario):
    """An eager step against the same step replayed from a captured graph."""

    derived_names = (*HostDispatchScenario.derived_names, "graph_launch_cost",
                     "graph_host_time", "eager_step_time", "graph_step_time", "step_saving",
                     "graph_overhead_ratio", "graph_speedup", "limit_attained",
                     "breakeven_steps")

    _graph_launch: float | None = quantity_input(
        "time", "us", default=None, high=1.0,
        doc="host cost of one graph launch; None means dispatch + launch")
    graphs: int = count_input(default=1, doc="graph launches per step")
    _capture_time: float | None = quantity_input(
        "time", "s", default=None, doc="one-time cost to capture (and compile) the graph")

    def _graph_launch_us(self) -> float:
        given = self.value_in("graph_launch")
        return self.value_in("dispatch") + self.value_in("launch") if given is None else given

    def _graph_host_us(self) -> float:
        return self.graphs * self._graph_launch_us()

    @property
    def graph_launch_cost(self):
        """Host cost of one graph launch: graph_launch, else dispatch + launch, in us."""
        return Q(self._graph_launch_us(), "us")

    @property
    def graph_host_time(self):
        """Host time of the captured step, graphs * graph_launch_cost, in us."""
        return Q(self._graph_host_us(), "us")

    @property
    def eager_step_time(self):
        """Serial eager step, host_time + device_time, in us."""
        return Q(self._host_us() + self._device_us(), "us")

    @property
    def graph_step_time(self):
        """Serial captured step, graph_host_time + device_time, in us."""
        return Q(self._graph_host_us() + self._device_us(), "us")

    @property
    def step_saving(self):
        """Time capture saves per step, host_time - graph_host_time, in us."""
        return Q(self._host_us() - self._graph_host_us(), "us")

    @property
    def graph_overhead_ratio(self) -> float:
        """Host time left after capture over device time: graph_host_time / device_time."""
        return self._graph_host_us() / self._device_us()

    @property
    def graph_speedup(self) -> float:
        """Gain of the captured step over eager: eager_step_time / graph_step_time."""
        device = self._device_us()
        return (self._host_us() + device) / (self._graph_host_us() + device)

    @property
    def limit_attained(self) -> float:
        """Share of the eager ceiling that capture reaches: graph_speedup / speedup_limit."""
        return self.graph_speedup / self.speedup_limit

    @property
    def breakeven_steps(self) -> float:
        """Steps whose savings repay the capture: capture_time / step_saving; raises a
        SpecError without capture_time or when capture saves nothing."""
        self.require("breakeven_steps", "capture_time")
        saving = self._host_us() - self._graph_host_us()
        if saving <= 0:
            raise SpecError(
                f"capturing never repays capture_time here: the graph's host time "
                f"{self._graph_host_us():g} us is not below the eager host time "
                f"{self._host_us():g} us, so step_saving is {saving:.4g} us (not positive)")
        return self.value_in("capture_time") * 1e6 / saving
