"""Engine profiles as specs: every default cited, the CLI lists and shows them, a bad
profile is a spec error naming the key."""

from __future__ import annotations

import json

import pytest

import roofkit
from roofkit.testing import run_cli

ENGINES = ("vllm-v0", "vllm-v1", "sglang", "tensorrt-llm")


def test_the_four_engine_profiles_load_with_sources(registry):
    for name in ENGINES:
        e = registry.spec("engines", name)
        assert e.scheduler.source.startswith("https://")
        if e.cuda_graphs.batch_sizes:
            assert e.cuda_graphs.source.startswith("https://")
        if e.host.calibration or e.host.by_batch:
            assert e.host.source.startswith("https://")


def test_vllm_v1_switches_to_its_large_device_defaults(registry):
    e = registry.spec("engines", "vllm")
    assert e.name == "vllm-v1"
    assert e.limits(registry.device("h100")) == (1024, 8192)
    assert e.limits(registry.device("a100-80gb")) == (256, 2048)


def test_engines_and_show_commands(capsys):
    code, out, _ = run_cli(capsys, "engines", "--json")
    assert code == 0
    assert {e["name"] for e in json.loads(out)} >= set(ENGINES)
    code, out, _ = run_cli(capsys, "show", "sglang")
    assert code == 0 and "prefill-first" in out and "cuda_graph_runner.py" in out


@pytest.mark.parametrize("seqs, calibration, key", [
    (0, "vllm", "scheduler.max_num_seqs"), (8, "nope", "host.calibration")])
def test_a_bad_engine_profile_names_the_key(tmp_path, seqs, calibration, key):
    bad = tmp_path / "engines"
    bad.mkdir()
    (bad / "x.toml").write_text(
        f'name = "x"\ndisplay_name = "X"\nversion = "1"\n[scheduler]\nmax_num_seqs = {seqs}\n'
        f'source = "https://a"\n[host]\ncalibration = "{calibration}"\nsource = "https://b"\n',
        encoding="utf-8")
    with pytest.raises(roofkit.SpecError, match=key.replace(".", r"\.")):
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path])


def test_host_time_beyond_the_measured_range_is_reported():
    r = roofkit.simulate("llama-3.1-8b", "h100", concurrency=2, requests=4, input_len=64,
                         output_len=8, engine="vllm-v0")
    assert any("beyond its measured range" in n and "8..64" in n for n in r.notes)
    assert r.outside_profile_range and r.to_dict()["outside_profile_range"]


def test_host_time_inside_the_measured_range_is_not_flagged():
    r = roofkit.simulate("llama-3.1-8b", "h100", concurrency=8, requests=8, input_len=64,
                         output_len=8, engine="vllm-v0")
    assert not any("beyond its measured range" in n for n in r.notes)
    assert not r.outside_profile_range
