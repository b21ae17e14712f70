"""The serving frontend (roofkit.load.frontend): one serial API-server process per replica in
front of the engine, by hand arithmetic and through the simulator."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import roofkit
from roofkit.load import frontend as fe_mod
from roofkit.load.requests import Stream
from roofkit.schema.engine import Frontend
from roofkit.serving import loso
from roofkit.testing import make_registry

SPECS = Path(__file__).resolve().parents[1] / "specs"


def test_fifo_is_lindleys_recursion():
    # jobs at 0, 0, 5 needing 2, 3, 1: done at 2, then 2 + 3 = 5, then max(5, 5) + 1 = 6
    assert fe_mod.fifo(np.array([0.0, 0.0, 5.0]), np.array([2.0, 3.0, 1.0])).tolist() == \
        [2.0, 5.0, 6.0]
    # an idle gap: the third job starts at its own arrival
    assert fe_mod.fifo(np.array([0.0, 1.0, 9.0]), np.array([2.0, 3.0, 1.0])).tolist() == \
        [2.0, 5.0, 10.0]


def _trace(ends, emitted, first, finish, inp):
    return SimpleNamespace(step_end=np.array(ends), step_emitted=np.array(emitted, float),
                           first_token=np.array(first), finish=np.array(finish),
                           input_len=np.array(inp))


def test_deliveries_and_admissions_by_hand():
    fe = Frontend(per_request=0.5e-3, per_prompt_token=10e-6, per_token=6e-3,
                  source="hand", where="hand")
    # two requests sent at 0 of 100 prompt tokens; the engine ran steps ending at 10, 20 and
    # 30 ms, two sequences emitting a token in each; first tokens at 10 ms, last at 30 ms
    tr = _trace([0.010, 0.020, 0.030], [2, 2, 2], [0.010, 0.010], [0.030, 0.030], [100, 100])
    st = Stream(input_len=np.array([100, 100]), output_len=np.array([3, 3]),
                arrival=np.array([0.0, 0.0]))
    d = fe_mod.deliver(fe, tr, st)
    # tokenizer thread: 1 ms each, done at 1 and 2 ms; event loop admits each in 0.5 ms
    assert d.visible == pytest.approx([1.5e-3, 2.5e-3])
    # streaming: 2 x 6 ms a step: 10 -> 22, max(20, 22) + 12 = 34, max(30, 34) + 12 = 46 ms
    assert d.step == pytest.approx([0.022, 0.034, 0.046])
    assert d.first == pytest.approx([0.022, 0.022])
    assert d.finish == pytest.approx([0.046, 0.046])
    assert d.busy == pytest.approx(3 * 0.012 + 2 * 0.5e-3)
    # the clients see a token every 12 ms (the event loop's pace), not the engine's 10 ms
    gaps, w = fe_mod.itl(d, tr)
    assert gaps == pytest.approx([0.012, 0.012]) and w.tolist() == [2.0, 2.0]


def test_a_closed_loop_resends_on_the_delivered_last_token():
    fe = Frontend(per_token=5e-3, source="hand", where="hand")
    # one client (concurrency 1), two requests; the first finished in the engine at 10 ms
    # (one step, one token), the second ran a step ending at 30 ms
    tr = _trace([0.010, 0.030], [1, 1], [0.010, 0.030], [0.010, 0.030], [8, 8])
    st = Stream(input_len=np.array([8, 8]), output_len=np.array([1, 1]), concurrency=1)
    d = fe_mod.deliver(fe, tr, st)
    # its last token reaches the client at 10 + 5 = 15 ms, when it sends the next request
    assert d.send == pytest.approx([0.0, 0.015])
    assert d.visible == pytest.approx([0.0, 0.015])
    # the engine sees it 5 ms after its predecessor finished there
    es = fe_mod.engine_stream(st, tr, d.visible)
    assert es.delay == pytest.approx([0.0, 0.005])


def _engine_registry(tmp_path, frontend: str):
    """The builtin registry plus ``vllm-test``: vllm-v1's profile with ``frontend``."""
    text = (SPECS / "engines" / "vllm-v1.toml").read_text()
    text = re.sub(r'^name = "vllm-v1"', 'name = "vllm-test"', text, flags=re.M)
    text = re.sub(r"^aliases = .*$", "aliases = []", text, flags=re.M)
    head, rest = text.split("\n[frontend]\n", 1)
    rest = rest[rest.index("\n[") + 1:]
    (tmp_path / "engines").mkdir(parents=True)
    (tmp_path / "engines" / "vllm-test.toml").write_text(head + "\n" + frontend + "\n" + rest)
    return make_registry(spec_paths=[tmp_path], cache=False)


def test_one_request_pays_its_tokenization_and_one_streamed_token(tmp_path):
    reg0 = _engine_registry(tmp_path / "a", "[frontend]")
    reg1 = _engine_registry(tmp_path / "b", '[frontend]\nper_token = "2 ms"\n'
                            'per_prompt_token = "10 us"\nsource = "hand"\nwhere = "hand"')
    kw = dict(engine="vllm-test", rate=1.0, requests=1, input_len=500, output_len=4)
    a = roofkit.simulate("llama-3.1-8b", "h100-sxm", registry=reg0, **kw)
    b = roofkit.simulate("llama-3.1-8b", "h100-sxm", registry=reg1, **kw)
    # the engine sees the prompt 500 x 10 us = 5 ms later; its first token reaches the client
    # 2 ms after the engine emitted it
    assert b.ttft["mean"] - a.ttft["mean"] == pytest.approx(5e-3 + 2e-3, abs=1e-9)
    # each later token is 2 ms after the engine's, so the gaps are the engine's
    assert b.tpot["mean"] == pytest.approx(a.tpot["mean"], rel=1e-9)
    assert any(n.startswith("frontend (one API-server process") for n in b.notes)
    assert not any(n.startswith("frontend (") for n in a.notes)


def test_a_saturated_frontend_sets_the_pace_of_a_closed_loop(tmp_path):
    # 64 clients, 200 us a streamed token: a step of 64 decodes costs the API server 12.8 ms,
    # more than twice the engine's step of a 1B model (about 5.4 ms with vLLM's host time),
    # so TPOT reads the frontend's pace
    reg = _engine_registry(tmp_path, '[frontend]\nper_token = "200 us"\nsource = "hand"\n'
                           'where = "hand"')
    r = roofkit.simulate("llama-3.2-1b", "h100-sxm", registry=reg, engine="vllm-test",
                         concurrency=64, requests=256, input_len=64, output_len=256)
    assert r.tpot["p50"] >= 0.95 * 64 * 200e-6
    assert r.output_tokens_per_s <= 1 / 200e-6 * 1.001
    assert any("sets the pace" in n for n in r.notes)


def test_the_vllm_frontend_is_a_constant_left_out_with_its_source(registry):
    consts = {c.name: c.origin for c in loso.frontend_constants(registry)}
    assert consts == {"engine:vllm-v1:frontend": "github:vllm-project/vllm",
                      "engine:vllm-v1-async:frontend": "github:vllm-project/vllm"}
    reg, removed = loso.without(registry, "github:vllm-project/vllm")
    assert "engine:vllm-v1:frontend" in removed
    assert not reg.spec("engines", "vllm-v1").frontend.active
    assert registry.spec("engines", "vllm-v1").frontend.active


def test_the_vllm_frontend_figure_is_the_published_saturation():
    # vLLM PR 27869: one API server streaming 34,078.85 tokens/s at its busiest
    fe = roofkit.build_registry(entry_points=False).spec("engines", "vllm-v1").frontend
    assert fe.per_token == pytest.approx(1 / 34078.85, rel=2e-3)
    # SGLang PR 31345: 100 ms for 70k tokens, 320 ms for 250k: the mean of the two rates
    assert fe.per_prompt_token == pytest.approx((0.100 / 70e3 + 0.320 / 250e3) / 2, rel=5e-3)


def test_a_frontend_without_a_source_is_refused(tmp_path):
    with pytest.raises(Exception, match=r"frontend\.source"):
        reg = _engine_registry(tmp_path, '[frontend]\nper_token = "20 us"')
        reg.spec("engines", "vllm-test")


def test_the_json_names_what_the_frontend_did():
    r = roofkit.simulate("llama-3.1-8b", "h100-sxm", engine="vllm", concurrency=8, requests=32,
                         input_len=256, output_len=32)
    f = r.to_dict()["frontend"]
    assert f["per_token_us"] == pytest.approx(29.34, abs=0.01) and f["settled"]
    assert 0 < f["busy_fraction"] < 0.2 and f["admission_wait_ms"] > 0
    # offline (the prompts handed to the engine in process): no frontend, no key
    off = roofkit.simulate("llama-3.1-8b", "h100-sxm", engine="vllm", concurrency=8,
                           requests=32, input_len=256, output_len=32, frontend=False)
    assert "frontend" not in off.to_dict()
    assert off.ttft["mean"] < r.ttft["mean"]


def test_the_planner_screens_an_aggregated_engine_behind_its_api_server(tmp_path):
    # a 400 us streamed token: C sequences' tokens take C x 400 us of the API server a step,
    # so each row's TPOT is at least that, and its TTFT carries the tokenization and one pass
    reg = _engine_registry(tmp_path, '[frontend]\nper_token = "400 us"\n'
                           'per_prompt_token = "10 us"\nsource = "hand"\nwhere = "hand"')
    plain = _engine_registry(tmp_path / "plain", "[frontend]")
    kw = dict(input_len=512, output_len=128, slo="ttft_p90=10s,tpot_p90=1s", max_devices=1,
              concurrencies=(8, 64), engine="vllm-test", verify=0, disagg=False,
              precisions=["bf16"])
    a = {r["concurrency"]: r for r in roofkit.plan("llama-3.1-8b", ["h100"], registry=reg,
                                                   **kw).rows if r["layout"] == "TP1"}
    b = {r["concurrency"]: r for r in roofkit.plan("llama-3.1-8b", ["h100"], registry=plain,
                                                   **kw).rows if r["layout"] == "TP1"}
    for c in (8, 64):
        assert a[c]["tpot_ms"] == pytest.approx(max(b[c]["tpot_ms"], c * 0.4), rel=1e-9)
        assert a[c]["ttft_ms"] - b[c]["ttft_ms"] == pytest.approx(512 * 0.01 + c * 0.4,
                                                                  rel=1e-9)
    # 64 x 0.4 = 25.6 ms: the frontend's pace, above the engine's step
    assert a[64]["tpot_ms"] == pytest.approx(25.6) and b[64]["tpot_ms"] < 25.6


def test_frontend_must_be_a_bool():
    with pytest.raises(roofkit.RoofkitError, match="frontend must be True or False"):
        roofkit.simulate("llama-3.1-8b", "h100-sxm", engine="vllm", concurrency=2, requests=4,
                         frontend="no")
