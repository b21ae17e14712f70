"""sweep(where=, feasible_only=, pareto=, best_by=): the filters run in each chunk's worker,
and the kept rows equal filtering the whole table in one process."""

import pickle
from concurrent.futures import Executor, Future, ThreadPoolExecutor

import numpy as np
import pytest

import roofkit
from roofkit.errors import SpecError
from roofkit.sweep import RegistrySettings

GRID = dict(workload="llama-3.1-8b", devices=["h100", "l4", "a100-80gb"],
            precisions=["fp8", "bf16"], batch_sizes=list(range(1, 65)), mode="decode",
            contexts=[512, 8192, 65536])
SETTINGS = RegistrySettings(entry_points=False)


class RecordingExecutor(Executor):
    """Runs each task at submit through pickle, as a remote worker would; records the number
    of rows each task sent back."""

    def __init__(self):
        self.returned = []

    def submit(self, fn, /, *args, **kwargs):
        fut = Future()
        args = pickle.loads(pickle.dumps(args))
        out = pickle.loads(pickle.dumps(fn(*args, **kwargs)))
        self.returned.append(len(out))
        fut.set_result(out)
        return fut


def _whole(**filters):
    t = roofkit.sweep(**GRID, registry=SETTINGS)
    n = len(t)
    for w in filters.get("where", ()):
        t = t.where(w)
    if filters.get("feasible_only"):
        t = t.where("feasible")
    if filters.get("pareto"):
        t = t.pareto(*filters["pareto"])
    if filters.get("best_by"):
        t = t.best_by(*filters["best_by"])
    return n, t


CASES = [
    dict(where=["itl_ms <= 30"]),
    dict(feasible_only=True),
    dict(feasible_only=True, pareto=("throughput_per_s", "latency_ms")),
    dict(where=["batch_size >= 4"], best_by=("device", "throughput_per_s")),
    dict(feasible_only=True, pareto=("throughput_per_s", "latency_ms"),
         best_by=("precision", "latency_ms")),
]


@pytest.mark.parametrize("filters", CASES)
def test_chunk_reduction_equals_filtering_the_whole_table(filters):
    n, whole = _whole(**filters)
    ex = RecordingExecutor()
    got = roofkit.sweep(**GRID, executor=ex, chunk_size=97, registry=SETTINGS, **filters)
    assert got.to_dict() == whole.to_dict()
    assert got.meta["evaluated"] == n == 3 * 2 * 3 * 64
    # what travelled back is what each chunk kept, not its 97 rows
    assert sum(ex.returned) < n
    if filters.get("best_by") and not filters.get("pareto"):
        assert sum(ex.returned) < n / 4
    # in process, chunked or not, the same rows
    assert roofkit.sweep(**GRID, registry=SETTINGS, **filters).to_dict() == whole.to_dict()
    assert roofkit.sweep(**GRID, registry=SETTINGS, chunk_size=50,
                         **filters).to_dict() == whole.to_dict()


def test_threads_reduce_too_and_count_the_infeasible():
    n, whole = _whole(feasible_only=True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        got = roofkit.sweep(**GRID, executor=pool, chunk_size=64, feasible_only=True)
    assert got.to_dict() == whole.to_dict()
    assert got.meta["omitted_infeasible"] == n - len(whole) > 0


def test_concat_consuming_equals_concat():
    from roofkit.sweep.table import SweepTable

    parts = [roofkit.sweep(**GRID | {"batch_sizes": [b]}) for b in (1, 2, 3)]
    expect = SweepTable.concat(parts).to_dict()
    got = SweepTable.concat_consuming(list(parts))
    assert got.to_dict() == expect
    assert np.array_equal(got["batch_size"][:3], [1, 1, 1])


@pytest.mark.parametrize("bad", [dict(pareto="latency_ms"), dict(best_by="device"),
                                 dict(where=[3])])
def test_malformed_filters_are_clear_errors(bad):
    with pytest.raises(SpecError):
        roofkit.sweep(**GRID, **bad)
