"""The layout search: refusals counted per reason, the best layouts recomputed by train,
the Pareto front, and the 405B-over-1,024-H100s case."""

import itertools
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from roofkit.cli import main
from roofkit.fleet.search import REASONS, search_layouts
from roofkit.fleet.training import train


@pytest.fixture(scope="module")
def result(registry):
    return search_layouts("llama-3.1-70b", "dgx-h100", devices=64, global_batch=128,
                          seq_len=4096, top=3, registry=registry)


def test_every_candidate_is_refused_costed_or_fits(result):
    refused = sum(result.refused.values())
    assert result.fitting + refused == result.evaluated
    assert result.refused["pp * vpp does not divide the layers"] > 0  # pp 3 on 80 layers...
    assert result.refused["does not fit in device memory"] > 0


def test_best_layouts_fit_and_are_ranked(result):
    times = [e.step_time_s for e in result.best]
    assert all(b >= a * 0.999 for a, b in itertools.pairwise(times))  # ties: memory
    assert all(e.fits for e in result.best)
    assert all(e.layout.devices == 64 for e in result.best)


def test_best_layout_equals_train_of_it(result, registry):
    best = result.best[0]
    lo = best.layout
    again = train("llama-3.1-70b", "dgx-h100", devices=64, tp=lo.tp, pp=lo.pp, vpp=lo.vpp,
                  dp=lo.dp, cp=lo.cp, micro_batch=lo.micro_batch, global_batch=128,
                  seq_len=4096, recompute=lo.recompute, zero=lo.zero, registry=registry)
    assert again.step_time_s == pytest.approx(best.step_time_s)


def test_pareto_front_gets_faster_with_devices(result):
    devs = [d for d, _, _ in result.pareto]
    times = [t for _, t, _ in result.pareto]
    assert devs == sorted(devs) and times == sorted(times, reverse=True)


def test_ties_go_to_the_layout_needing_less_memory(registry):
    r = search_layouts("llama-3.1-405b", "dgx-h100", devices=1024, global_batch=1024,
                       seq_len=8192, top=4, registry=registry, device_counts=[1024])
    for a, b in itertools.pairwise(r.best):
        if round(a.step_time_s / r.best[0].step_time_s, 3) == \
                round(b.step_time_s / r.best[0].step_time_s, 3):
            assert a.memory_per_device_bytes <= b.memory_per_device_bytes


def test_pinned_axes_are_respected(registry):
    r = search_layouts("llama-3.1-70b", "dgx-h100", devices=64, global_batch=128,
                       seq_len=4096, top=2, fixed={"tp": 8, "zero": 1}, registry=registry,
                       device_counts=[64])
    assert all(e.layout.tp == 8 and e.layout.zero == 1 for e in r.best)


def test_a_thread_executor_gives_the_same_ranking(registry, result):
    with ThreadPoolExecutor(2) as ex:
        r = search_layouts("llama-3.1-70b", "dgx-h100", devices=64, global_batch=128,
                           seq_len=4096, top=3, registry=registry, executor=ex)
    assert [e.step_time_s for e in r.best] == [e.step_time_s for e in result.best]


def test_405b_over_1024_h100s_finds_fitting_layouts(registry):
    r = search_layouts("llama-3.1-405b", "dgx-h100", devices=1024, global_batch=1024,
                       seq_len=8192, top=1, registry=registry, device_counts=[1024])
    assert r.best and r.best[0].fits and r.best[0].layout.devices == 1024
    assert r.evaluated == 23040 and r.fitting + sum(r.refused.values()) == r.evaluated


def test_cli_search_json_lists_layouts_and_refusals(capsys):
    assert main(["train", "llama-3.1-8b", "dgx-h100", "--devices", "8", "--global-batch",
                 "32", "--seq-len", "2048", "--search", "--top", "2", "--json",
                 "--no-plugins"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["layouts"]) == 2 and "step_time_s" in d["layouts"][0]
    assert set(d["refused"]) == set(REASONS)


def test_every_costed_layout_is_at_least_its_compute_and_holds_its_weights(registry):
    """Invariants over every valid layout of one pass: the step is no shorter than its
    compute plus its bubble, every part is nonnegative, memory holds at least the weights."""
    import numpy as np

    from roofkit.fleet.cluster import with_devices
    from roofkit.fleet.model import arch_of
    from roofkit.fleet.search import _evaluate, candidates

    arch = arch_of("mixtral-8x7b", registry)
    cl = with_devices(registry.cluster("dgx-h100"), 64)
    cand = candidates(arch, 64, 8, {})
    _, r, ok, _ = _evaluate(arch, cl, "calibrated", registry, cand, 64, 256, 4096, 0, False,
                            False, 0.1)
    assert ok.size > 1000
    for part in ("compute", "tp", "cp", "ep", "pp", "dp", "bubble", "optimizer"):
        assert np.all(np.asarray(r[part]) >= 0), part
    assert np.all(r["step"] >= r["compute"] + r["bubble"] - 1e-12)
    assert np.all(r["memory"] >= r["weights"])
    assert np.all(np.asarray(r["ep"])[cand["ep"][ok] > 1] > 0)
