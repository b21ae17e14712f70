"""Hostile Python calls: every bad argument is a RoofkitError that says what was wrong, on
every call (cached or not); request sizes past their stated bound are refused by name."""

from __future__ import annotations

from concurrent.futures import Executor, Future

import numpy as np
import pytest
from deadline import deadline

import roofkit
from roofkit import Engine, RoofkitError, bounds
from roofkit.errors import ArgumentError
from roofkit.sweep import distribute

W, D = "llama-3.1-8b", "h100"


@pytest.fixture(autouse=True)
def _deadline():
    with deadline(60):
        yield


# -- bounds (request sizes) -------------------------------------------------------------

def test_fits_refuses_1e300_sequences_naming_the_bound():
    with pytest.raises(ArgumentError, match=r"seqs must be at most 16,777,216 .*MAX_BATCH"):
        roofkit.fits(W, D, seqs=1e300)


def test_solve_refuses_a_batch_of_10_to_the_400_not_an_overflow_error():
    with pytest.raises(ArgumentError, match="MAX_BATCH"):
        Engine.solve(W, D, batch_size=10**400)
    with pytest.raises(ArgumentError, match="MAX_TOKENS"):
        Engine.solve(W, D, is_training=True, seq_len=10**400)


def test_a_uint64_batch_above_2_to_the_63_never_wraps_to_minus_one_in_a_sweep():
    big = np.array([1, 2**63 + 5], dtype=np.uint64)
    with pytest.raises(ArgumentError, match="batch_sizes must be at most"):
        roofkit.sweep(W, [D], batch_sizes=big)
    with pytest.raises(ArgumentError, match="batch_sizes must be at most"):
        roofkit.sweep(W, [D], batch_sizes=big, mode="decode")
    from roofkit.engine.sweep import inference_arrays

    with pytest.raises(ArgumentError, match="batch_sizes must be at most"):
        inference_arrays(W, D, np.array([2**64 - 1], dtype=np.uint64))


def test_serve_refuses_an_output_of_1e8_tokens_before_allocating_its_steps():
    with pytest.raises(ArgumentError, match=r"output_len must be at most 1,048,576"):
        roofkit.serve(W, D, output_len=10**8)
    with pytest.raises(ArgumentError, match="input_len \\+ output_len"):
        roofkit.serve(W, D, input_len=bounds.MAX_TOKENS, output_len=2)


def test_a_simulation_of_1e8_requests_is_refused_not_run_for_days():
    with pytest.raises(ArgumentError, match=r"requests must be at most 1,048,576 .*MAX_REQUESTS"):
        roofkit.simulate(W, D, rate=10, requests=10**8)
    with pytest.raises(ArgumentError, match=r"concurrency must be at most .*MAX_BATCH"):
        roofkit.simulate(W, D, concurrency=10**8)
    with pytest.raises(ArgumentError, match="requests must be a whole number >= 1"):
        roofkit.simulate(W, D, rate=10, requests=0)


def test_a_count_at_its_bound_is_accepted():
    fit = roofkit.fits(W, D, seqs=bounds.MAX_BATCH, context=1)
    assert fit.fits is False and fit.seqs == bounds.MAX_BATCH
    est = roofkit.decode(W, D, batch=1, context=np.array([1, bounds.MAX_TOKENS]))
    assert np.all(np.asarray(est.time) > 0)


# -- API consistency ----------------------------------------------------------------------

@pytest.mark.parametrize("bad", [0, -1, 2.5, float("nan"), "4", True])
def test_count_checks_raise_a_roofkit_error(bad):
    for call in (lambda: roofkit.decode(W, D, batch=bad), lambda: roofkit.fits(W, D, seqs=bad),
                 lambda: roofkit.prefill(W, D, tokens=bad),
                 lambda: roofkit.serve(W, D, batch=bad)):
        with pytest.raises(RoofkitError) as info:
            call()
        assert isinstance(info.value, ValueError)  # still a ValueError for old callers


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"formats": "fp8"}, "formats must map roles to formats"),
    ({"formats": {"experts": 8}}, "formats must map roles to formats"),
    ({"kv_cache_dtype": 8}, "kv_cache_dtype must be a name"),
    ({"precision": [1]}, "precision must be a name"),
    ({"cost_model": 3}, "cost_model must be a name"),
    ({"registry": "x"}, "registry must be a roofkit Registry"),
    ({"basis": "nope"}, "basis must be one of"),
    ({"ssm_h_dtype": 16}, "ssm_h_dtype must be a format name"),
])
def test_bad_arguments_are_roofkit_errors_not_attribute_errors(kwargs, words):
    with pytest.raises(ArgumentError, match=words):
        roofkit.decode(W, D, **kwargs)


@pytest.mark.parametrize("kwargs", [{"kv_cache_dtype": 8}, {"registry": "x"},
                                    {"precision": 8}])
def test_serve_and_solve_refuse_bad_arguments_too(kwargs):
    with pytest.raises(ArgumentError):
        roofkit.serve(W, D, **kwargs)
    if "kv_cache_dtype" not in kwargs:
        with pytest.raises(ArgumentError):
            Engine.solve(W, D, **kwargs)


def test_draft_yes_is_refused_on_every_call_not_only_before_the_plan_is_cached():
    roofkit.decode(W, D, draft=True)  # the plan is now cached
    for _ in range(2):
        with pytest.raises(ArgumentError, match="draft must be True or False"):
            roofkit.decode(W, D, draft="yes")
        with pytest.raises(ArgumentError, match="conv_windows must be True or False"):
            roofkit.fits(W, D, conv_windows="no")


@pytest.mark.parametrize("bad", [0, -1])
def test_max_load_refuses_zero_or_negative_max_requests(bad):
    from roofkit.serving import max_load

    with pytest.raises(ArgumentError, match=f"max_requests must be an integer >= 1, got {bad}"):
        max_load(W, D, input_len=128, output_len=128, max_requests=bad)


def test_a_spec_object_of_the_wrong_kind_is_refused_by_name():
    with pytest.raises(ArgumentError, match="expected a workload name"):
        roofkit.decode(12, D)


def test_a_100_kb_bad_value_is_cut_in_the_message():
    with pytest.raises(RoofkitError) as info:
        roofkit.decode("x" * 100_000, D)
    assert len(str(info.value)) < 1000 and "more characters" in str(info.value)
    with pytest.raises(ArgumentError) as info:
        Engine.solve(W, D, batch_size="9" * 100_000)
    assert len(str(info.value)) < 1000


# -- executors ------------------------------------------------------------------------------

class _Inline(Executor):
    """Runs each task at submit; ``swap(i, result)`` says what chunk ``i`` hands back."""

    def __init__(self, swap):
        self.swap, self.calls = swap, 0

    def submit(self, fn, *args):
        future = Future()
        result = fn(*args)
        self.calls += 1
        future.set_result(self.swap(self.calls - 1, result))
        return future


@pytest.mark.parametrize("swap", [
    lambda i, r: (r[0], r[1], r[2], r[3].head(0)) if i % 2 else r,  # a chunk's rows dropped
    lambda i, r: None if i == 1 else r,  # a chunk's result lost
    lambda i, r: r if i == 0 else (0, r[1] - r[0], r[2], r[3]),  # another chunk's rows
])
def test_an_executor_that_drops_or_swaps_chunks_is_an_error_not_half_the_rows(swap):
    with pytest.raises(RoofkitError, match=r"sweep chunk rows \[\d+, \d+\) of 8"):
        roofkit.sweep(W, [D], batch_sizes=[1, 2, 4, 8, 16, 32, 64, 128],
                      executor=_Inline(swap), chunk_size=2)


def test_an_honest_executor_gives_every_row():
    table = roofkit.sweep(W, [D], batch_sizes=[1, 2, 4, 8, 16], executor=_Inline(
        lambda i, r: r), chunk_size=2)
    assert list(table["batch_size"]) == [1, 2, 4, 8, 16]


_RUN_CHUNK = distribute.run_chunk


def _killed_after_the_first_chunk(item):
    import os
    import signal

    if item[1] > 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return _RUN_CHUNK(item)


def test_a_killed_pool_worker_is_an_error_naming_the_chunk(monkeypatch):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # forked workers see the patched entry point, and the one that gets row 2 dies
    monkeypatch.setattr(distribute, "run_chunk", _killed_after_the_first_chunk)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool, \
            pytest.raises(RoofkitError, match=r"sweep chunk rows \[2, 4\) of 4 failed on the "
                                              r"executor: BrokenProcessPool.*worker process "
                                              r"died"):
        roofkit.sweep(W, [D], batch_sizes=[1, 2, 4, 8], executor=pool, chunk_size=2)
