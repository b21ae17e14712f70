"""Host dispatch and kernel-launch overhead of one eager step, against its device time.

A step has ``blocks`` blocks of ``ops_per_block`` Python-level operations; each pays
``dispatch``, and each of the ``launches_per_block`` kernels per block (default: one per
operation) pays ``launch``. Host and device are added serially, with no overlap:

    host_time = operations * dispatch + launches * launch
    overhead_ratio = host_time / device_time
    speedup_limit = (host_time + device_time) / device_time = 1 + overhead_ratio

Above an overhead ratio of 1 the host takes more than half the step. ``speedup_limit`` is
the ceiling of removing every host cost, not a prediction of what an optimization gains.
Excludes host/device overlap, graph capture, and measured interpreter or driver behaviour.
"""

from __future__ import annotations

from ..units import Q
from .base import Scenario, count_input, quantity_input, scenario_class


@scenario_class
class HostDispatchScenario(Scenario):
    """The host's work to issue one eager step against ``device_time`` of device work."""

    derived_names = ("operations", "launches", "per_op_cost", "dispatch_time", "launch_time",
                     "host_time", "overhead_ratio", "launch_ratio", "host_share",
                     "speedup_limit")

    ops_per_block: int = count_input(doc="Python-level operations per block")
    blocks: int = count_input(default=1, doc="blocks per step (layers)")
    launches_per_block: int | None = count_input(
        default=None, doc="kernel launches per block; None means one per operation")
    # one operation's dispatch and one kernel launch take microseconds: at most 1 s
    _dispatch: float = quantity_input("time", "us", doc="host dispatch cost per operation",
                                      high=1.0)
    _launch: float = quantity_input("time", "us", doc="kernel-launch cost per launch",
                                    high=1.0)
    _device_time: float = quantity_input("time", "us", doc="device work of one step")

    # -- floats in microseconds -----------------------------------------------------------
    def _dispatch_us(self) -> float:
        return self.operations * self.value_in("dispatch")

    def _launch_us(self) -> float:
        return self.launches * self.value_in("launch")

    def _host_us(self) -> float:
        return self._dispatch_us() + self._launch_us()

    def _device_us(self) -> float:
        return self.value_in("device_time")

    # -- derived attributes ---------------------------------------------------------------
    @property
    def operations(self) -> int:
        """Python-level operations across all blocks: blocks * ops_per_block."""
        return self.blocks * self.ops_per_block

    @property
    def launches(self) -> int:
        """Kernel launches across all blocks: blocks * (launches_per_block or ops_per_block)."""
        per = self.ops_per_block if self.launches_per_block is None else self.launches_per_block
        return self.blocks * per

    @property
    def per_op_cost(self):
        """Dispatch plus launch for an operation that launches one kernel, in us."""
        return Q(self.value_in("dispatch") + self.value_in("launch"), "us")

    @property
    def dispatch_time(self):
        """Total Python-side dispatch time, operations * dispatch, in us."""
        return Q(self._dispatch_us(), "us")

    @property
    def launch_time(self):
        """Total kernel-launch overhead, launches * launch, in us."""
        return Q(self._launch_us(), "us")

    @property
    def host_time(self):
        """Serial host time, dispatch_time + launch_time, in us."""
        return Q(self._host_us(), "us")

    @property
    def overhead_ratio(self) -> float:
        """Host time over device time: host_time / device_time."""
        return self._host_us() / self._device_us()

    @property
    def launch_ratio(self) -> float:
        """Kernel launches alone over device time: launch_time / device_time."""
        return self._launch_us() / self._device_us()

    @property
    def host_share(self) -> float:
        """Host share of the serial step: host_time / (host_time + device_time)."""
        host = self._host_us()
        return host / (host + self._device_us())

    @property
    def speedup_limit(self) -> float:
        """Most that removing all host work could gain: (host_time + device_time) / device_time."""
        device = self._device_us()
        return (self._host_us() + device) / device
