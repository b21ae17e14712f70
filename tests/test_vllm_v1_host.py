"""vLLM V1's measured host time per step: the host calibration profile ``engines.vllm-v1``
(Scheduler.update_from_output at 128 and 256 sequences, vllm-project/vllm PR #46112, the
sampled-token round trip ``launch.kernel_sync``, and the rest of the step derived from a
vLLM 0.10.1.1 server's decode windows at 10..256 sequences, tests/test_serving_calibration.py),
charged serially by the load simulator."""

import re
from pathlib import Path

import numpy as np
import pytest

import roofkit
from roofkit.circuit.roofline import host_calibration
from roofkit.serving.overhead import engine_step_time, measured_range

UPDATE_128, UPDATE_256 = 0.142e-3, 0.287e-3   # s, PR #46112 merge-base medians
SYNC = 9.65e-6                                # s, launch.kernel_sync (ReFrame, A100)
REST_10, REST_256 = 3.385e-3, 6.515e-3        # s, rest_of_step (dennislee22 windows)


def rest(b):
    """rest_of_step at ``b`` sequences: linear through its two points, both ways."""
    return REST_10 + (b - 10) * (REST_256 - REST_10) / 246


def _profile(registry):
    return host_calibration(registry)["engines"]["vllm-v1"]


def test_the_profile_loads_and_the_engine_points_at_it(registry):
    prof = _profile(registry)
    assert prof.source == "https://github.com/vllm-project/vllm/pull/46112"
    assert set(prof.components) == {"update_from_output", "sampled_token_sync", "rest_of_step"}
    assert prof.components["rest_of_step"].source.startswith(
        "https://github.com/dennislee22/vLLM-benchmarking/blob/")
    spec = registry.spec("engines", "vllm-v1")
    assert spec.host.calibration == "vllm-v1" and not spec.host.overlap
    assert spec.host.source.startswith("https://github.com/vllm-project/vllm/blob/v0.10.0/")


def test_the_measured_batches_give_the_cited_figures(registry):
    prof = _profile(registry)
    assert engine_step_time(prof, 128) == pytest.approx(UPDATE_128 + SYNC + rest(128))
    assert engine_step_time(prof, 256) == pytest.approx(UPDATE_256 + SYNC + REST_256)
    # halfway: (0.142 + 0.287) / 2 = 0.2145 ms
    assert engine_step_time(prof, 192) == pytest.approx(0.2145e-3 + SYNC + rest(192))


def test_outside_128_256_it_is_extended_linearly_both_ways(registry):
    """update_from_output loops over every scheduled request (above_where), so past 256 it
    keeps the measured slope: (0.287 - 0.142) / 128 = 1.1328 us a request; at 1,500
    sequences 0.287 + 1244 x 1.1328e-3 = 1.6962 ms, at 3,200 0.287 + 2944 x 1.1328e-3 =
    3.6220 ms; the sampled-token round trip, measured once, stays batch-independent."""
    prof = _profile(registry)
    slope = (UPDATE_256 - UPDATE_128) / 128          # 1.133 us a sequence
    assert engine_step_time(prof, 48) == pytest.approx(UPDATE_128 - 80 * slope + SYNC + rest(48))
    # update_from_output's line crosses 0 at 2.7 (held at 0 below); rest_of_step's runs on
    assert engine_step_time(prof, 2) == pytest.approx(SYNC + rest(2))
    assert prof.components["update_from_output"].above == "linear"
    assert prof.components["rest_of_step"].above == "linear"
    assert engine_step_time(prof, 1500) == pytest.approx(1.69620e-3 + SYNC + rest(1500), rel=1e-4)
    assert engine_step_time(prof, 3200) == pytest.approx(3.62203e-3 + SYNC + rest(3200), rel=1e-4)


def test_a_profile_not_marked_linear_is_still_held_above(registry):
    """vidur's vLLM V0 profile (8..64 sequences) keeps its batch-64 value at 3,200: the
    sum of its five components' batch-64 medians, 0.95218 + 1.16300 + 1.37026 + 4.10826 +
    0.05497 = 7.64867 ms."""
    prof = host_calibration(registry)["engines"]["vllm-v0"]
    assert engine_step_time(prof, 3200) == pytest.approx(7.64867e-3)
    assert engine_step_time(prof, 64) == pytest.approx(7.64867e-3)


def test_a_bad_above_is_refused_with_its_key(tmp_path):
    from roofkit.errors import SpecError
    from roofkit.testing import make_registry, write_spec

    write_spec(tmp_path, "calibration", "host-odd", """
        name = "host-odd"
        [engines.odd]
        source = "https://example.com/odd"
        where = "a table"
        [engines.odd.components.loop]
        by_batch = { "8" = "1 ms", "16" = "2 ms" }
        above = "quadratic"
        [engines.once]
        source = "https://example.com/once"
        where = "a table"
        [engines.once.components.step]
        by_batch = { "8" = "1 ms" }
        above = "linear"
        above_where = "https://example.com/code"
        [engines.uncited]
        source = "https://example.com/uncited"
        where = "a table"
        [engines.uncited.components.loop]
        by_batch = { "8" = "1 ms", "16" = "2 ms" }
        above = "linear"
        """)
    with pytest.raises(SpecError) as err:
        make_registry(spec_paths=[tmp_path], cache=False)
    text = str(err.value)
    assert "engines.odd.components.loop.above" in text and "'quadratic'" in text
    assert "engines.once.components.step.above" in text and "two batch sizes" in text
    assert "engines.uncited.components.loop.above_where" in text


def test_a_component_measured_once_has_no_range_to_leave(registry):
    assert measured_range(_profile(registry)) == (10, 256)
    assert measured_range(host_calibration(registry)["engines"]["tensorrt-llm-session"]) is None


def _engine_without_host(tmp_path: Path) -> Path:
    """vllm-v1's spec renamed, its [host] calibration dropped: what it charged before."""
    src = (Path(roofkit.__file__).parents[2] / "specs" / "engines" / "vllm-v1.toml")
    text = src.read_text(encoding="utf-8")
    text = text.replace('name = "vllm-v1"', 'name = "v1-unmeasured"', 1)
    text = re.sub(r'aliases = \[.*?\]\n', "", text, count=1)
    text = re.sub(r'\[host\]\n.*?\n\n\n', "[host]\noverlap = false\n\n\n", text, count=1,
                  flags=re.S)
    folder = tmp_path / "engines"
    folder.mkdir()
    (folder / "v1-unmeasured.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_simulate_charges_the_profile_serially(tmp_path):
    """128 clients, 8-token prompts (one prefill step), 9 output tokens: 8 decode steps at
    128 sequences, so each TPOT carries the step's host time once. Without a measured
    figure a step pays launch.kernel_sync; with the profile 0.142 ms + kernel_sync + the rest
    of the step at 128 sequences."""
    reg = roofkit.build_registry(entry_points=False, spec_paths=[_engine_without_host(tmp_path)])
    kw = dict(concurrency=128, requests=128, input_len=8, output_len=9, registry=reg,
              frontend=False)  # the engine's step alone, without its API server
    measured = roofkit.simulate("llama-3.1-8b", "h100", engine="vllm-v1", **kw)
    before = roofkit.simulate("llama-3.1-8b", "h100", engine="v1-unmeasured", **kw)
    assert measured.max_batch == before.max_batch == 128
    diff_ms = measured.to_dict()["tpot_ms"]["mean"] - before.to_dict()["tpot_ms"]["mean"]
    assert diff_ms == pytest.approx(0.142 + rest(128) * 1e3, abs=1e-9)
    assert any("host calibration 'vllm-v1'" in n for n in measured.notes)
    assert not measured.outside_profile_range


def test_a_run_below_10_sequences_is_flagged():
    r = roofkit.simulate("llama-3.1-8b", "h100", concurrency=4, requests=4, input_len=8,
                         output_len=4, engine="vllm-v1")
    assert r.outside_profile_range and r.to_dict()["outside_profile_range"]
    assert any("beyond its measured range" in n and "10..256" in n for n in r.notes)


def test_serve_charges_it_and_flags_a_batch_above_256(registry):
    from roofkit.serving import estimate

    prof = _profile(registry)
    inside = estimate("llama-3.1-8b", "h100", batch=192, input_len=128, output_len=8,
                      engine="vllm-v1", registry=registry)
    above = estimate("llama-3.1-8b", "h100", batch=512, input_len=128, output_len=8,
                     engine="vllm-v1", registry=registry)
    assert inside.decode_host.dispatch == pytest.approx(0.2145e-3 + SYNC + rest(192))
    assert not inside.outside_profile_range
    # 512 sequences: 0.287 + 256 x 1.1328e-3 = 0.5770 ms, the linear extension (and the rest's)
    assert above.decode_host.dispatch == pytest.approx(0.5770e-3 + SYNC + rest(512), rel=1e-4)
    assert above.decode_host.dispatch == pytest.approx(engine_step_time(prof, 512))
    assert above.outside_profile_range
    assert any("10..256" in n and "update_from_output, rest_of_step extended linearly" in n
               and "dennislee22" in n
               for n in above.notes)


GRAPH = 3.5e-6                                # s, launch.graph (CUDA.jl graphs page)


def test_the_async_profile_is_vllm_v1_with_its_host_overlapped(registry):
    sync, ahead = registry.spec("engines", "vllm-v1"), registry.spec("engines", "vllm-async")
    assert ahead.name == "vllm-v1-async"
    assert ahead.scheduler == sync.scheduler and ahead.cuda_graphs == sync.cuda_graphs
    assert ahead.kernels == sync.kernels
    assert ahead.host.calibration == sync.host.calibration == "vllm-v1"
    assert ahead.host.overlap and not sync.host.overlap
    assert ahead.host.source == "https://github.com/vllm-project/vllm/pull/19970"


def test_the_async_profile_hides_the_host_time_behind_the_device():
    """The 128-sequence decode of test_simulate_charges_the_profile_serially: serially a
    graph-replayed step is device + 0.142 ms + kernel_sync + launch.graph; overlapped it is
    max(device, that), the device's alone (some ms for 16 GB of weights), so the TPOT falls
    by 0.142 + 0.00965 + 0.0035 ms and the rest of the step at 128 sequences."""
    kw = dict(concurrency=128, requests=128, input_len=8, output_len=9, frontend=False)
    serial = roofkit.simulate("llama-3.1-8b", "h100", engine="vllm-v1", **kw)
    ahead = roofkit.simulate("llama-3.1-8b", "h100", engine="vllm-v1-async", **kw)
    assert serial.max_batch == ahead.max_batch == 128
    diff_ms = serial.to_dict()["tpot_ms"]["mean"] - ahead.to_dict()["tpot_ms"]["mean"]
    assert diff_ms == pytest.approx((UPDATE_128 + SYNC + GRAPH + rest(128)) * 1e3, abs=1e-9)


def test_the_mlenergy_v3_runs_use_the_async_profile():
    """Their configs say async-scheduling: true (the 8B H100 one read at ml-energy/benchmark
    0b961c75: configs/vllm/lm-arena-chat/meta-llama/Llama-3.1-8B-Instruct/H100/
    monolithic.config.yaml); 22 runs: the 21 of the v3 tables and the 8B H100 max_num_seqs 64
    row of the leaderboard data (docs/energy.md, 'The two served 8B H100 cases')."""
    from roofkit import energy_cases

    runs = [c for c in energy_cases.load_cases() if c.max_num_seqs]
    assert len(runs) == 22
    assert {c.engine for c in runs} == {"vllm-v1-async"}


def test_serve_overlaps_the_decode_steps_of_the_async_profile(registry):
    """A static batch of 192 on the async profile: each decode step costs max(device, host)
    instead of device + host; the device step of an 8B model (some ms) is longer than the
    host's (0.2145 ms + kernel_sync + every kernel at 2.7 us), so every ITL loses exactly the
    host time, and the first token, which has no step before it to hide behind, keeps it."""
    from roofkit.serving import estimate

    kw = dict(batch=192, input_len=128, output_len=8, registry=registry)
    serial = estimate("llama-3.1-8b", "h100", engine="vllm-v1", **kw)
    ahead = estimate("llama-3.1-8b", "h100", engine="vllm-v1-async", **kw)
    h = serial.decode_host.host_time
    assert ahead.decode_host.host_time == pytest.approx(h)
    assert h == pytest.approx(0.2145e-3 + SYNC + rest(192)
                              + serial.decode_host.launches * 2.7e-6)
    assert np.all(ahead.itl_steps > h)
    assert np.allclose(serial.itl_steps - ahead.itl_steps, h, rtol=0, atol=1e-12)
    assert ahead.ttft == pytest.approx(serial.ttft)
    assert ahead.host_overlap and not serial.host_overlap
    assert any("overlapped" in n for n in ahead.notes)


def test_the_async_profile_reports_a_run_outside_10_256():
    """Overlapped or not, the host time is vllm-v1's measurement, bounded by its range."""
    r = roofkit.simulate("llama-3.1-8b", "h100", concurrency=4, requests=4, input_len=8,
                         output_len=4, engine="vllm-v1-async")
    assert r.outside_profile_range
    assert any("beyond its measured range" in n and "10..256" in n for n in r.notes)
