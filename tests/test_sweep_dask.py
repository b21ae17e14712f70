"""The Dask form the docs show: a sweep on a real ``dask.distributed.LocalCluster``'s
executor equals the in-process table (dask is in the test extra)."""

import pytest

import roofkit
from roofkit.sweep import RegistrySettings

distributed = pytest.importorskip("distributed")  # installed by the test extra

GRID = dict(workload="llama-3.1-8b", devices=["h100", "mi300x"], precisions=["fp8", "bf16"],
            batch_sizes=list(range(1, 33)), mode="decode", contexts=[1024, 16384])


@pytest.mark.slow
def test_sweep_on_a_dask_local_cluster_equals_one_process():
    settings = RegistrySettings(entry_points=False)
    local = roofkit.sweep(**GRID, registry=settings)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", timeout=120) as cluster, \
            distributed.Client(cluster) as client:
        remote = roofkit.sweep(**GRID, executor=client.get_executor(), chunk_size=50,
                               registry=settings)
        best = roofkit.sweep(**GRID, executor=client.get_executor(), chunk_size=50,
                             registry=settings, best_by=("device", "throughput_per_s"))
    assert remote.to_dict() == local.to_dict()
    assert best.to_dict() == local.best_by("device", "throughput_per_s").to_dict()
