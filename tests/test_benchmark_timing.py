"""benchmarks/_timing.py, the timing every benchmark shares: a block is ``number`` calls,
its time their mean, the result the median block; ``warm`` makes one untimed call first."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "_timing.py"


@pytest.fixture(scope="module")
def timing():
    spec = importlib.util.spec_from_file_location("_timing", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Clock:
    """A fake ``time.perf_counter`` that each call of ``tick`` advances by the next step."""

    def __init__(self, steps):
        self.now, self.steps, self.calls = 0.0, list(steps), 0

    def perf_counter(self):
        return self.now

    def tick(self):
        self.calls += 1
        self.now += self.steps.pop(0)


def test_warm_makes_one_untimed_call_before_repeat_times_number(timing, monkeypatch):
    clock = Clock([100.0] + [1.0] * 6)  # the warm call takes 100 s and is not counted
    monkeypatch.setattr(timing.time, "perf_counter", clock.perf_counter)
    blocks = timing.timings(clock.tick, repeat=3, number=2)
    assert clock.calls == 1 + 3 * 2
    assert blocks == [1.0, 1.0, 1.0]  # (1 + 1) s / 2 calls per block


def test_without_warm_every_call_is_timed(timing, monkeypatch):
    clock = Clock([4.0, 1.0, 2.0])
    monkeypatch.setattr(timing.time, "perf_counter", clock.perf_counter)
    assert timing.timings(clock.tick, repeat=3, warm=False) == [4.0, 1.0, 2.0]
    assert clock.calls == 3


def test_the_median_is_of_the_block_means(timing, monkeypatch):
    # blocks of two calls: (1 + 3) / 2 = 2, (10 + 10) / 2 = 10, (0.5 + 0.5) / 2 = 0.5
    clock = Clock([1.0, 3.0, 10.0, 10.0, 0.5, 0.5])
    monkeypatch.setattr(timing.time, "perf_counter", clock.perf_counter)
    assert timing.median_seconds(clock.tick, repeat=3, number=2, warm=False) == 2.0


def test_every_benchmark_times_with_the_shared_module():
    # bench_startup_ab.py interleaves the runs of several checkouts and times CPU as well:
    # a loop of its own, not a median of blocks
    for path in sorted(_PATH.parent.glob("bench_*.py")):
        if path.name != "bench_startup_ab.py" and "perf_counter" in path.read_text():
            assert "from _timing import" in path.read_text(), f"{path.name} times alone"
