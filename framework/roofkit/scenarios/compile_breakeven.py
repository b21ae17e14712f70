"""Eager against compiled execution: how many items repay the compile time.

Compiling pays once the time saved per item, summed over items, exceeds the compile time:

    saving_per_item = 1 / eager_rate - 1 / compiled_rate
    breakeven_items = compile_time / saving_per_item          (needs saving_per_item > 0)

An experiment of ``experiment_items`` items that changes the code ``recompiles`` times pays
one compile per change:

    experiment_compiled_total = recompiles * compile_time + experiment_items / compiled_rate
    experiment_slowdown = experiment_compiled_total / (experiment_items / eager_rate)

Assumes steady rates; excludes warm-up, compile caches and rate changes mid-experiment.
"""

from __future__ import annotations

from ..errors import SpecError
from ..units import Q
from .base import Scenario, count_input, quantity_input, scenario_class


@scenario_class
class CompileBreakevenScenario(Scenario):
    """Eager against compiled execution: the work that repays ``compile_time``."""

    derived_names = ("eager_item_time", "compiled_item_time", "saving_per_item",
                     "breakeven_items", "speedup", "experiment_eager",
                     "experiment_compiled_running", "experiment_compiled_total",
                     "experiment_slowdown")

    _eager_rate: float = quantity_input("rate", "1/s", doc="items per second, eager")
    _compiled_rate: float = quantity_input("rate", "1/s", doc="items per second, compiled")
    _compile_time: float = quantity_input("time", "s", doc="time of one compile")
    experiment_items: int | None = count_input(default=None, doc="items in the experiment")
    recompiles: int | None = count_input(default=None,
                                         doc="compiles the experiment pays (one per change)")

    # -- floats ---------------------------------------------------------------------------
    def _eager_ms(self) -> float:
        return 1000.0 / self.value_in("eager_rate")

    def _compiled_ms(self) -> float:
        return 1000.0 / self.value_in("compiled_rate")

    def _saving_ms(self) -> float:
        return self._eager_ms() - self._compiled_ms()

    def _eager_s(self, attribute: str) -> float:
        self.require(attribute, "experiment_items")
        return self.experiment_items / self.value_in("eager_rate")

    def _running_s(self, attribute: str) -> float:
        self.require(attribute, "experiment_items")
        return self.experiment_items / self.value_in("compiled_rate")

    def _total_s(self, attribute: str) -> float:
        self.require(attribute, "experiment_items", "recompiles")
        return self.recompiles * self.value_in("compile_time") + self._running_s(attribute)

    # -- derived attributes ---------------------------------------------------------------
    @property
    def eager_item_time(self):
        """Time per eager item, 1 / eager_rate, in ms."""
        return Q(self._eager_ms(), "ms")

    @property
    def compiled_item_time(self):
        """Time per compiled item, 1 / compiled_rate, in ms."""
        return Q(self._compiled_ms(), "ms")

    @property
    def saving_per_item(self):
        """Time compiling saves per item, eager_item_time - compiled_item_time, in ms
        (nonpositive when compiled is no faster: then compiling never repays)."""
        return Q(self._saving_ms(), "ms")

    @property
    def breakeven_items(self) -> float:
        """Items whose summed savings equal the compile time: compile_time / saving_per_item;
        raises a SpecError when the saving is not positive."""
        saving = self._saving_ms()
        if saving <= 0:
            raise SpecError(
                f"compiling never repays compile_time here: compiled_rate "
                f"{self.value_in('compiled_rate'):g} 1/s is not above eager_rate "
                f"{self.value_in('eager_rate'):g} 1/s, so saving_per_item is {saving:.4g} ms "
                "(not positive) and no item count breaks even")
        return self.value_in("compile_time") * 1000.0 / saving

    @property
    def speedup(self) -> float:
        """Compiled over eager throughput: compiled_rate / eager_rate."""
        return self.value_in("compiled_rate") / self.value_in("eager_rate")

    @property
    def experiment_eager(self):
        """Experiment at the eager rate, experiment_items / eager_rate, in s."""
        return Q(self._eager_s("experiment_eager"), "s")

    @property
    def experiment_compiled_running(self):
        """Experiment run after compiling, experiment_items / compiled_rate, in s
        (compile time excluded)."""
        return Q(self._running_s("experiment_compiled_running"), "s")

    @property
    def experiment_compiled_total(self):
        """Compiled experiment with one compile per change,
        recompiles * compile_time + experiment_compiled_running, in s."""
        return Q(self._total_s("experiment_compiled_total"), "s")

    @property
    def experiment_slowdown(self) -> float:
        """Compiled experiment over eager experiment: experiment_compiled_total /
        experiment_eager (above 1: compiling made the experiment slower)."""
        return (self._total_s("experiment_slowdown")
                / self._eager_s("experiment_slowdown"))
