"""sweep(..., executor=...): chunks of the grid on any concurrent.futures.Executor,
concatenated in row order, equal to the in-process result."""

import multiprocessing
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor

import pytest

import roofkit
from roofkit.errors import RoofkitError
from roofkit.sweep import RegistrySettings

GRID = dict(workload="llama-3.1-8b", devices=["h100", "l4", "esp32-s3"],
            precisions=["fp16", "fp8", "nvfp4"], batch_sizes=list(range(1, 41)))


class InlineExecutor(Executor):
    """Runs each task at submit; records how many it got (a stand-in for a cluster)."""

    def __init__(self):
        self.calls = 0

    def submit(self, fn, /, *args, **kwargs):
        import pickle

        self.calls += 1
        fut = Future()
        args = pickle.loads(pickle.dumps(args))  # what a remote worker would receive
        fut.set_result(pickle.loads(pickle.dumps(fn(*args, **kwargs))))
        return fut


def test_process_pool_gives_the_same_table_as_one_process():
    settings = RegistrySettings(entry_points=False)
    local = roofkit.sweep(**GRID, registry=settings)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        remote = roofkit.sweep(**GRID, executor=pool, chunk_size=70, registry=settings)
    assert len(remote) == len(local) == 360
    assert remote.to_dict() == local.to_dict()
    assert remote.meta == local.meta


def test_chunks_split_groups_and_keep_row_order():
    ex = InlineExecutor()
    settings = RegistrySettings(entry_points=False)
    grid = GRID | {"precisions": ["fp8", "bf16"]}
    t = roofkit.sweep(**grid, mode="decode", contexts=[128, 4096], executor=ex,
                      chunk_size=33, registry=settings)
    local = roofkit.sweep(**grid, mode="decode", contexts=[128, 4096], registry=settings)
    assert ex.calls == -(-len(local) // 33)
    assert t.to_dict() == local.to_dict()


def test_default_chunks_are_four_per_worker():
    from roofkit.sweep.distribute import default_chunk_size

    class Pool(InlineExecutor):
        _max_workers = 2

    assert default_chunk_size(800, Pool()) == 100
    assert default_chunk_size(800, InlineExecutor()) == 50


def test_a_registry_object_does_not_travel(registry):
    with pytest.raises(RoofkitError, match="RegistrySettings"):
        roofkit.sweep(**GRID, executor=InlineExecutor(), registry=registry)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool, \
            pytest.raises(RoofkitError, match="ThreadPoolExecutor"):
        roofkit.sweep(**GRID, executor=pool, registry=registry)


@pytest.mark.parametrize("mode", ["engine", "decode"])
def test_threads_share_a_registry_object(tmp_path, mode):
    """A thread pool runs in this process: a Registry (here one with an extra spec folder
    that no RegistrySettings describes) is shared, not refused."""
    from roofkit.testing import write_spec

    src = roofkit.build_registry(entry_points=False).devices.origin("h100").read_text()
    lines = [line for line in src.splitlines()
             if not line.startswith(("aliases =", "symbol ="))]
    write_spec(tmp_path, "devices", "h100-custom",
               "\n".join(lines).replace('name = "h100-sxm"', 'name = "h100-custom"'))
    reg = roofkit.build_registry(entry_points=False, spec_paths=[tmp_path], cache=False)
    grid = GRID | {"devices": ["h100-custom", "l4"]}
    kw = {"contexts": [128, 2048]} if mode == "decode" else {}
    local = roofkit.sweep(**grid, mode=mode, registry=reg, **kw)
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = roofkit.sweep(**grid, mode=mode, executor=pool, chunk_size=23,
                                 registry=reg, **kw)
    assert len(threaded) == len(local) > 23 * 4
    assert threaded.to_dict() == local.to_dict()
    assert set(threaded["device"]) == {"h100-custom", "l4"}


def test_threads_and_two_registries_at_once_keep_their_own_facts(tmp_path):
    """Concurrent solves on different registries never mix one's facts with the other's."""
    from roofkit import Engine
    from roofkit.testing import write_spec

    base = roofkit.build_registry(entry_points=False, cache=False)
    src = base.devices.origin("h100").read_text()
    write_spec(tmp_path, "devices", "h100-sxm", 'overrides = "h100-sxm"\n' + src.replace(
        'bandwidth = "3.35 TB/s"', 'bandwidth = "1 TB/s"', 1))
    slow = roofkit.build_registry(entry_points=False, spec_paths=[tmp_path], cache=False)
    want = {id(r): Engine.solve("llama-3.1-8b", "h100", registry=r).latency_s
            for r in (base, slow)}
    assert want[id(base)] != want[id(slow)]

    def work(r):
        return all(Engine.solve("llama-3.1-8b", "h100", registry=r).latency_s == want[id(r)]
                   for _ in range(2000))

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert all(pool.map(work, [base, slow] * 4))


def test_registry_settings_pickle_and_refuse_plugin_objects():
    import pickle

    s = RegistrySettings(plugins=["roofkit_builtins.precisions"], entry_points=False,
                         spec_paths=["specs"])
    assert pickle.loads(pickle.dumps(s)) == s
    with pytest.raises(RoofkitError, match="module names"):
        RegistrySettings(plugins=[object()])


def test_worker_errors_reach_the_caller():
    with pytest.raises(roofkit.UnknownNameError, match="h100"):
        roofkit.sweep("llama-3.1-8b", ["h10"], executor=InlineExecutor(),
                      registry=RegistrySettings(entry_points=False))


def test_an_executor_must_submit():
    with pytest.raises(RoofkitError, match="Executor"):
        roofkit.sweep(**GRID, executor=object())
