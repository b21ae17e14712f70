"""A decode step replayed from a CUDA graph pays each kernel's startup on the device
(``launch.graph_node`` of the device calibration), by hand."""

from __future__ import annotations

import numpy as np
import pytest
from load_fakes import DECODE, PREFILL, ConstantCosts

from roofkit.circuit.roofline import device_roofline
from roofkit.load.host import HostTable
from roofkit.load.requests import Stream
from roofkit.load.scheduler import EngineConfig, run
from roofkit.load.steps import StepCosts
from roofkit.registry import default_registry


def test_graph_node_is_read_from_the_calibration_and_absent_elsewhere():
    reg = default_registry()
    # gpu-small-kernels '-graph' first row: 65,536 B a kernel at 52 GB/s (H200), 49 GB/s (A100)
    assert pytest.approx(1.26e-6, rel=0.01) == 65536 / 52e9
    assert pytest.approx(1.34e-6, rel=0.01) == 65536 / 49e9
    h200 = device_roofline(reg.device("h200"), "calibrated", reg)
    assert h200.graph_node == pytest.approx(1.26e-6)
    assert "launch.graph_node" in h200.provenance["graph_node"]
    assert device_roofline(reg.device("a100-80gb"), "calibrated", reg).graph_node == \
        pytest.approx(1.34e-6)
    # the H100 SXM takes the H200's figure (same GH100 die), said so in its notes
    assert device_roofline(reg.device("h100-sxm"), "calibrated", reg).graph_node == \
        pytest.approx(1.26e-6)
    # sibling boards of the same die take the measured board's figure, said so in their notes:
    # the A100 40GB the A100 80GB's (GA100, both 108 SMs), the H100 PCIe the H200's (GH100,
    # 114 SMs against 132), the L40S and the RTX 4090 the L40's (AD102): gpu-small-kernels
    # '-graph' first row on the L40, 65,536 B at 70 GB/s = 0.936 us
    assert pytest.approx(0.94e-6, rel=0.01) == 65536 / 70e9
    assert device_roofline(reg.device("a100-40gb"), "calibrated", reg).graph_node == \
        pytest.approx(1.34e-6)
    assert device_roofline(reg.device("h100-pcie"), "calibrated", reg).graph_node == \
        pytest.approx(1.26e-6)
    for name in ("l40s", "rtx-4090"):
        roof = device_roofline(reg.device(name), "calibrated", reg)
        assert roof.graph_node == pytest.approx(0.94e-6)
        assert "l40_graph.txt" in roof.provenance["graph_node"]
    # the datasheet basis has no such figure; a device with none measured charges nothing
    assert device_roofline(reg.device("h200"), "datasheet", reg).graph_node == 0.0
    for name in ("mi300x", "b200", "gb200", "rtx-5090", "l4", "v100", "mi325x"):
        assert device_roofline(reg.device(name), "calibrated", reg).graph_node == 0.0
    assert device_roofline(reg.device("l40s"), "datasheet", reg).graph_node == 0.0


def test_step_costs_charge_every_kernel_of_the_plan():
    sc = StepCosts("llama-3.1-8b", "h200", max_rows=64, max_seqs=8, max_context=512)
    assert sc.kernels > 300  # 32 layers of about ten kernels
    assert sc.graph_step == pytest.approx(sc.kernels * 1.26e-6)


class _GraphCosts(ConstantCosts):
    graph_step = 0.002  # seconds a graph replay adds to a decode step


def _trace(sizes, dense):
    cfg = EngineConfig(max_num_seqs=16, max_num_batched_tokens=8192, chunked_prefill=True,
                       mixed_batches=False, policy="prefill-first", block_size=1,
                       admission="grow", graph_sizes=sizes, kv_capacity=1e12, kv_token=1.0,
                       state_seq=0.0)
    host = HostTable(eager=[0.0] * 17, graph=[0.0] * 17, measured=None, source="")
    stream = Stream(input_len=np.array([100]), output_len=np.array([11]),
                    arrival=np.array([0.0]))
    return run(stream, cfg, _GraphCosts(dense), host)


@pytest.mark.parametrize("dense", [0, 16])  # step by step, and runs of decode steps at once
def test_a_graph_replay_adds_its_kernels_startup_to_each_decode_step(dense):
    # one request of 11 output tokens: a prefill step of 30 ms (eager: no graph time), then
    # 10 decode steps. Captured (size 1): each 10 + 2 ms; beyond the captured sizes (none):
    # 10 ms each.
    graphed = _trace((1, 2, 4), dense)
    eager = _trace((), dense)
    assert graphed.finish[0] == pytest.approx(PREFILL + 10 * (DECODE + 0.002))
    assert eager.finish[0] == pytest.approx(PREFILL + 10 * DECODE)


def _overlapped(sizes, dense):
    cfg = EngineConfig(max_num_seqs=16, max_num_batched_tokens=8192, chunked_prefill=True,
                       mixed_batches=False, policy="prefill-first", block_size=1,
                       admission="grow", graph_sizes=sizes, kv_capacity=1e12, kv_token=1.0,
                       state_seq=0.0)
    host = HostTable(eager=[0.0] * 17, graph=[0.0] * 17, measured=None, source="",
                     overlap=True)
    stream = Stream(input_len=np.array([100]), output_len=np.array([11]),
                    arrival=np.array([0.0]))
    return run(stream, cfg, _GraphCosts(dense), host)


@pytest.mark.parametrize("dense", [0, 16])
def test_an_overlapped_host_pays_the_startup_on_every_step(dense):
    # an overlapped host launches ahead of the device, so its eager steps pay the kernels'
    # startup as well: the prefill 30 + 2 ms and 10 decode steps of 10 + 2 ms, graphed or not
    for sizes in ((1, 2, 4), ()):
        trace = _overlapped(sizes, dense)
        assert trace.finish[0] == pytest.approx(PREFILL + 0.002 + 10 * (DECODE + 0.002))
