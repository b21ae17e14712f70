"""The layout search and the SLO planner take the same executors as the sweeps: on a real
``dask.distributed.LocalCluster`` (worker processes, each building its own registry from
``RegistrySettings``) they give the in-process answer (dask is in the test extra)."""

import pytest

import roofkit
from roofkit.sweep import RegistrySettings

distributed = pytest.importorskip("distributed")  # installed by the test extra

SEARCH = dict(devices=64, global_batch=64, seq_len=4096, top=3)
PLAN = dict(input_len=512, output_len=128, slo="ttft_p90=1s,tpot_p90=20ms", max_devices=16,
            concurrencies=(8, 64), verify=0)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", timeout=120) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _layouts(res):
    return [(e.layout, e.step_time_s) for e in res.best]


@pytest.mark.slow
def test_layout_search_on_a_dask_local_cluster_equals_one_process(client):
    settings = RegistrySettings(entry_points=False)
    local = roofkit.search_layouts("llama-3.1-8b", "dgx-h100", registry=settings, **SEARCH)
    remote = roofkit.search_layouts("llama-3.1-8b", "dgx-h100", registry=settings,
                                    executor=client.get_executor(), **SEARCH)
    assert remote.to_dict() == local.to_dict()
    assert local.evaluated > 0 and len(local.pareto) >= 2  # 64, 32, 16 and 8 devices


@pytest.mark.slow
def test_plan_on_a_dask_local_cluster_equals_one_process(client):
    settings = RegistrySettings(entry_points=False)
    local = roofkit.plan("llama-3.1-8b", ["dgx-h100", "h200"], registry=settings, **PLAN)
    remote = roofkit.plan("llama-3.1-8b", ["dgx-h100", "h200"], registry=settings,
                          executor=client.get_executor(), **PLAN)
    assert remote.to_dict() == local.to_dict()
    assert {r.get("cluster") for r in local.rows} >= {"dgx-h100", "16xh200"}


def test_a_registry_object_is_refused_for_process_workers():
    from concurrent.futures import ProcessPoolExecutor

    reg = roofkit.build_registry(entry_points=False)
    with ProcessPoolExecutor(1) as ex, pytest.raises(roofkit.RoofkitError,
                                                     match="RegistrySettings"):
        roofkit.search_layouts("llama-3.1-8b", "dgx-h100", registry=reg, executor=ex,
                               **SEARCH)
