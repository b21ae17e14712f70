"""Tensor parallelism on one node, as the circuit shards it: weights, heads and KV per
device and the ring all-reduce, by hand."""

import numpy as np
import pytest
from serving_toy import KV_PER_TOKEN, NORM_PARAMS, PARAMS, toy_registry

from roofkit.circuit.collective import Curve, LinkModel, Ring, curve, fit
from roofkit.errors import RoofkitError
from roofkit.serving import serve


@pytest.fixture(scope="module")
def reg(tmp_path_factory):
    return toy_registry(tmp_path_factory.mktemp("toy"))


def test_ring_all_reduce_by_hand():
    ring = Ring(alpha=2e-6, beta=100e9)
    # 2 (n - 1) alpha + 2 (n - 1) / n * S / beta at n = 4, S = 1 MB
    assert ring.time(1e6, 4) == pytest.approx(6 * 2e-6 + 1.5 * 1e6 / 100e9)
    assert ring.time(1e6, 1) == 0


def test_a_fit_through_two_measurements_reproduces_them():
    n = 8
    points = [(512.0, 5.9e-6), (1048576.0, 33.8e-6)]
    ring = fit(points, n, fallback_beta=1.0, name="custom")
    for size, t in points:
        assert ring.time(size, n) == pytest.approx(t)


def test_an_engine_runs_the_fastest_algorithm_at_each_size():
    small = Ring(alpha=0.5e-6, beta=60e9)   # low latency, low bandwidth
    big = Ring(alpha=2e-6, beta=480e9)      # NCCL-like
    ar = LinkModel({"custom": {8: small}, "nccl": {8: big}})
    for size in (1e3, 1e5, 1e7, 1e9):
        assert ar.all_reduce(size, 8) == min(small.time(size, 8), big.time(size, 8))


def test_a_curve_measured_at_many_sizes_is_read_between_them():
    # NCCL over 8 H100s (Azure, bus bandwidth): 1 KiB, 32 MiB and 8 GiB
    n, c = 8, 2 * 7 / 8
    pts = [(1024.0, c * 1024 / 0.07e9), (33554432.0, c * 33554432 / 295.53e9),
           (8589934592.0, c * 8589934592 / 478.87e9)]
    ring = fit(pts, n, fallback_beta=1.0, name="nccl")
    measured = curve(pts, n, ring)
    assert isinstance(measured, Curve)
    for size, secs in pts:  # every measured size is reproduced, not only the two fitted
        assert measured.cost(c * size, 2 * (n - 1)) == pytest.approx(secs)
    # 32 MiB: the measured 198 us, where the two-point ring gives 148 us
    assert pts[1][1] == pytest.approx(198.7e-6, rel=0.01)
    assert ring.cost(c * pts[1][0], 14) == pytest.approx(148e-6, rel=0.02)
    # between sizes: log-log interpolation; outside them: the ring
    mid = 2 ** 20.0
    lo, hi = measured.cost(c * 1024, 14), measured.cost(c * 33554432, 14)
    assert lo < measured.cost(c * mid, 14) < hi
    assert measured.cost(c * 2 ** 34, 14) == pytest.approx(ring.cost(c * 2 ** 34, 14))
    assert measured.cost(c * 512, 14) == pytest.approx(ring.cost(c * 512, 14))
    # arrays give the same as floats
    sizes = np.array([512.0, 1024.0, mid, 33554432.0, 2 ** 34])
    got = measured.cost(c * sizes, 14.0)
    assert got == pytest.approx([measured.cost(c * s, 14) for s in sizes])
    # two sizes are a ring
    assert curve(pts[::2], n, ring) is ring


def test_a_measurement_at_another_group_size_keeps_its_bandwidth_and_latency():
    # NCCL measured over 8 devices (14 ring steps), used over 2 (2 steps): the same bus
    # bandwidth and the same total small-message latency, 14 x 1 us = 2 x 7 us
    nccl8 = Ring(alpha=1e-6, beta=400e9, name="nccl")
    cal = LinkModel({"nccl": {8: nccl8}}, "calibrated")
    (ring,) = cal.rings(2)
    assert ring.beta == 400e9 and ring.alpha == pytest.approx(7e-6)
    assert cal.all_reduce(1e6, 2) == pytest.approx(2 * 7e-6 + 1e6 / 400e9)
    # its own size is used as measured; the nearest size wins, the larger on a tie
    assert cal.rings(8) == (nccl8,)
    both = LinkModel({"nccl": {4: Ring(3e-6, 360e9), 8: nccl8}}, "calibrated")
    assert both.rings(6)[0].alpha == pytest.approx(1e-6 * 7 / 5)
    assert both.rings(2)[0].alpha == pytest.approx(3e-6 * 3 / 1)
    # the datasheet ring is the reference's: latency per step at every group size
    sheet = LinkModel({"datasheet": {2: Ring(2e-6, 450e9)}}, "datasheet")
    assert sheet.all_reduce(1e6, 8) == pytest.approx(14 * 2e-6 + 1.75 * 1e6 / 450e9)


def test_two_all_reduces_per_layer_over_the_device_interconnect(reg):
    B = 4
    est = serve("toy-lm", "toy-gpu", batch=B, input_len=16, output_len=3, tp=2,
                basis="datasheet", registry=reg)
    rows = {r["node"]: r for r in est.decode_breakdown}
    message = B * 256 * 2                       # rows x hidden x 2 bytes
    by_hand = 2 * (2 - 1) * 1e-6 + 2 * (2 - 1) / 2 * message / 100e9   # toy interconnect
    for name in ("attention.all_reduce", "ffn.all_reduce"):
        assert rows[name]["count"] == 2          # one per layer
        assert rows[name]["time_s"] == pytest.approx(2 * by_hand)
        assert rows[name]["bound"] == "interconnect"
    # the two all-reduces of each layer are launched kernels too
    assert est.decode_host.launches == 23 + 2 * 2


def test_weights_and_kv_are_sharded(reg):
    kw = dict(batch=1, input_len=8, output_len=2, basis="datasheet", registry=reg)
    one = serve("toy-lm", "toy-gpu", tp=1, **kw)
    two = serve("toy-lm", "toy-gpu", tp=2, **kw)
    four = serve("toy-lm", "toy-gpu", tp=4, **kw)
    # everything split two ways but the norms, which every device keeps whole
    assert two.weights_per_device == 2 * ((PARAMS - NORM_PARAMS) / 2 + NORM_PARAMS)
    assert two.kv_per_token_per_device == KV_PER_TOKEN / 2
    # two KV heads over four devices: each keeps one head (replicated), not half of one
    assert four.kv_per_token_per_device == KV_PER_TOKEN / 2
    assert one.kv_per_token_per_device == KV_PER_TOKEN


def test_tp_needs_heads_that_split_and_devices_the_link_joins(reg):
    kw = dict(input_len=8, output_len=2, registry=reg)
    with pytest.raises(RoofkitError, match="heads"):
        serve("toy-lm", "toy-gpu", tp=3, **kw)
    with pytest.raises(RoofkitError, match="exceeds"):
        serve("toy-lm", "toy-gpu", tp=8, **kw)


def test_tp_on_the_calibrated_basis_uses_measured_all_reduce():
    est = serve("llama-3.1-70b", "h100", tp=4, batch=64, input_len=128, output_len=128)
    assert "allreduce" in est.provenance["interconnect"]
    assert est.fits and est.tp == 4
