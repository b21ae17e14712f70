"""Decode, prefill, footprint and fit through the public API."""

import numpy as np
import pytest

import roofkit
from roofkit.errors import UnknownNameError


@pytest.fixture(scope="module")
def reg():
    return roofkit.build_registry(entry_points=False)


def test_llama_3_1_8b_weights_at_bf16(reg):
    fp = roofkit.footprint("llama-3.1-8b", registry=reg)
    assert fp.weights == pytest.approx(16.06e9, rel=0.005)
    assert fp.kv_per_token == 131_072


def test_fp8_kv_cache_halves_kv_bytes(reg):
    fp = roofkit.footprint("llama-3.1-8b", kv_cache_dtype="fp8", registry=reg)
    assert fp.kv_per_token == 65_536


def test_gdn_state_per_sequence_is_the_reference_formula(reg):
    # Qwen3-Next: 36 GatedDeltaNet layers, each lin_v_heads x lin_k_dim x lin_v_dim x h_bytes
    f32 = roofkit.footprint("qwen3-next-80b-a3b", registry=reg)
    assert f32.state_per_seq == 36 * 32 * 128 * 128 * 4
    for name in ("f16", "f16-pool", "bf16", "fp16"):
        two = roofkit.footprint("qwen3-next-80b-a3b", registry=reg, ssm_h_dtype=name)
        assert two.state_per_seq == 36 * 32 * 128 * 128 * 2, name
    assert roofkit.footprint("qwen3-next-80b-a3b", registry=reg,
                             ssm_h_dtype="f16-pool").ssm_h_dtype == "f16-pool"
    assert f32.kv_per_token == 12 * 2 * 2 * 256 * 2  # 12 attention layers, 2 kv heads


def test_conv_windows_are_reported_apart_and_counted_only_on_request(reg):
    fp = roofkit.footprint("qwen3-next-80b-a3b", registry=reg)
    assert fp.conv_state_per_seq == 36 * 8192 * 3 * 2  # channels x (kernel - 1) x bf16
    assert fp.count_conv is False
    assert fp.bytes(2, 100) == fp.weights + 2 * (fp.kv_bytes(100) + fp.state_per_seq)
    counted = roofkit.footprint("qwen3-next-80b-a3b", registry=reg, conv_windows=True)
    assert counted.bytes(2, 100) == fp.bytes(2, 100) + 2 * fp.conv_state_per_seq
    fit = roofkit.fits("qwen3-next-80b-a3b", "h200", seqs=4, context=1000, registry=reg)
    assert not fit.conv_counted and "conv windows" in fit.not_counted
    assert fit.conv_state_bytes == 4 * fp.conv_state_per_seq
    fit_c = roofkit.fits("qwen3-next-80b-a3b", "h200", seqs=4, context=1000,
                         conv_windows=True, registry=reg)
    assert fit_c.required == pytest.approx(fit.required + fit.conv_state_bytes)
    assert "conv windows" not in fit_c.not_counted
    assert fit_c.to_dict()["conv_windows_counted"] is True


def test_unsupported_state_formats_are_refused(reg):
    with pytest.raises(roofkit.SpecError, match="f16-pool"):
        roofkit.footprint("qwen3-next-80b-a3b", registry=reg, ssm_h_dtype="fp8")


def test_mamba2_state_per_sequence_is_fixed_at_f32(reg):
    fp = roofkit.footprint("mamba2-2.7b", registry=reg)
    assert fp.state_per_seq == 64 * 80 * 64 * 128 * 4
    assert fp.conv_state_per_seq == 64 * (5120 + 256) * 3 * 2
    assert fp.kv_per_token == 0
    # the reference keeps Mamba2's state at f32 whatever ssm_h_dtype says
    assert roofkit.footprint("mamba2-2.7b", registry=reg,
                             ssm_h_dtype="bf16").state_per_seq == fp.state_per_seq


def test_bytes_for_seqs_and_context(reg):
    fp = roofkit.footprint("llama-3.1-8b", registry=reg)
    assert fp.bytes(4, 1000) == fp.weights + 4 * 1000 * 131_072


def test_sliding_window_caps_kv_kept(reg):
    fp = roofkit.footprint("mistral-7b", registry=reg)  # every layer slides over 4096
    assert fp.kv_bytes(32768) == fp.kv_per_token * 4096
    gemma = roofkit.footprint("gemma-2-9b", registry=reg)  # half the layers slide
    assert gemma.kv_bytes(8192) == pytest.approx(gemma.kv_per_token / 2 * (8192 + 4096))


def test_weight_floor_is_the_main_section_with_routed_experts_at_top_k(reg):
    fp = roofkit.footprint("mixtral-8x7b", "h100", basis="datasheet", registry=reg)
    experts = fp.weights_by_role["experts"]
    main = fp.weights_by_section["main"]
    assert fp.weight_floor == pytest.approx(main - experts * (1 - 2 / 8), rel=1e-12)
    assert fp.weight_floor_time == pytest.approx(fp.weight_floor / 3.35e12)
    # the fuller number: plus one embedding row, the final norm and the LM head
    head = 32000 * 4096 * 2 + 4096 * 2
    assert fp.weight_floor_all_sections == pytest.approx(fp.weight_floor + 4096 * 2 + head,
                                                         rel=1e-12)
    assert fp.weight_floor_all_sections_time == pytest.approx(
        fp.weight_floor_all_sections / 3.35e12)


def test_weight_floor_by_hand_llama_3_1_8b(reg):
    fp = roofkit.footprint("llama-3.1-8b", registry=reg)
    per_layer = (4096 * 6144 + 4096 * 4096 + 4096 * 2 * 14336 + 14336 * 4096 + 2 * 4096) * 2
    assert fp.weight_floor == 32 * per_layer


def test_decode_at_batch_one_is_near_the_weight_floor(reg):
    est = roofkit.decode("llama-3.1-8b", "h100", batch=1, context=1, registry=reg)
    fp = roofkit.footprint("llama-3.1-8b", "h100", registry=reg)
    assert est.bound == "memory"
    assert est.time == pytest.approx(fp.weight_floor_all_sections_time, rel=0.02)
    assert est.time > fp.weight_floor_time  # the step also reads the LM head


def test_prefill_runs_the_main_section_at_t_rows_and_half_context(reg):
    T = 4096
    est = roofkit.prefill("llama-3.1-8b", "h100", tokens=T, registry=reg)
    assert {r.section for r in est.rows} == {"main"}  # the reference: layers only
    attn = next(r for r in est.rows if r.op == "paged_attention")
    assert attn.flops == 32 * 4 * T * (T // 2) * 32 * 128
    qkv = next(r for r in est.rows if r.node == "attention.qkv")
    assert qkv.flops == 32 * 2 * T * 4096 * 6144
    assert est.bound == "compute"
    odd = roofkit.prefill("llama-3.1-8b", "h100", tokens=4097, registry=reg)
    attn = next(r for r in odd.rows if r.op == "paged_attention")
    assert attn.flops == 32 * 4 * 4097 * 2048 * 32 * 128  # T // 2


def test_prefill_with_head_adds_the_embedding_and_last_token_logits(reg):
    T = 4096
    main = roofkit.prefill("llama-3.1-8b", "h100", tokens=T, seqs=2, registry=reg)
    full = roofkit.prefill("llama-3.1-8b", "h100", tokens=T, seqs=2, head=True,
                           registry=reg)
    assert {r.section for r in full.rows} == {"embed", "main", "head"}
    head = next(r for r in full.rows if r.node == "lm_head")
    assert head.flops == 2 * 2 * 128256 * 4096  # logits of each sequence's last token
    ends = sum(r.time for r in full.rows if r.section != "main")
    assert full.time == pytest.approx(main.time + ends, rel=1e-12)
    assert full.kernels > main.kernels and full.settings["head"] is True


def test_every_node_time_is_at_least_its_roofline_terms(reg):
    est = roofkit.decode("mixtral-8x7b", "h100", batch=16, context=4096, registry=reg)
    for r in est.rows:
        assert r.time >= max(r.t_memory, r.t_compute) * (1 - 1e-12)
    assert est.time == pytest.approx(sum(r.time for r in est.rows))


def test_vectorized_decode_matches_scalar_calls(reg):
    batches = [1, 8, 64]
    many = roofkit.decode("llama-3.1-70b", "h100", batch=np.array(batches), context=2048,
                          registry=reg)
    for i, b in enumerate(batches):
        one = roofkit.decode("llama-3.1-70b", "h100", batch=b, context=2048, registry=reg)
        assert many.time[i] == pytest.approx(one.time, rel=1e-12)
        assert many.bound[i] == one.bound


def test_fp4_falls_back_to_fp8_on_h100_and_the_basis_says_so(reg):
    est = roofkit.decode("llama-3.1-8b", "h100", precision="nvfp4", basis="datasheet",
                         registry=reg)
    slots = {r.node: r.slot for r in est.rows}
    assert slots["ffn.gate_up"] == "fp8"
    assert "nvfp4 on h100-sxm: no fp4 peak; runs at the fp8 peak" in est.basis
    assert est.basis.startswith("datasheet ceiling for h100-sxm")


def test_fp4_uses_the_fp4_slot_where_the_device_has_one(reg):
    est = roofkit.decode("llama-3.1-8b", "b200", precision="nvfp4", registry=reg)
    assert {r.node: r.slot for r in est.rows}["ffn.gate_up"] == "fp4"
    assert "fallback" not in est.basis


def test_fp8_activations_use_the_fp8_slot(reg):
    est = roofkit.decode("llama-3.1-8b", "h100", precision="fp8", registry=reg)
    assert {r.node: r.slot for r in est.rows}["ffn.down"] == "fp8"


def test_fp8_gemms_read_fp8_inputs_and_keep_a_16_bit_stream(reg):
    # W8A8: the GEMM reads its input quantized (1 B) and writes its output to the 16-bit
    # stream; ffn.down of Llama-3.1-8B is k = 14336 -> n = 4096, 32 layers, 4 rows
    est = roofkit.decode("llama-3.1-8b", "h100", batch=4, context=100, precision="fp8",
                         registry=reg)
    assert est.settings["activations"] == "fp8" and est.settings["stream"] == "bf16"
    rows = {r.node: r for r in est.rows}
    assert rows["ffn.down"].act_bytes == 32 * 4 * (14336 * 1 + 4096 * 2)
    # the all-reduce message is the stream: 4 rows x 4096 x 2 B, whatever the GEMM format
    tp = roofkit.decode("llama-3.1-8b", "h100", batch=4, context=100, precision="fp8", tp=2,
                        registry=reg)
    ar = {r.node: r for r in tp.rows}["ffn.all_reduce"]
    assert ar.link_bytes == 32 * 2 * (2 - 1) / 2 * 4 * 4096 * 2
    # a stream format given by the caller wins: an FP8 stream halves the output bytes
    f8 = roofkit.decode("llama-3.1-8b", "h100", batch=4, context=100, precision="fp8",
                        formats={"stream": "fp8"}, registry=reg)
    assert {r.node: r for r in f8.rows}["ffn.down"].act_bytes == 32 * 4 * (14336 + 4096)
    # a 16-bit run keeps one format for both
    bf = roofkit.decode("llama-3.1-8b", "h100", batch=4, context=100, registry=reg)
    assert {r.node: r for r in bf.rows}["ffn.down"].act_bytes == 32 * 4 * (14336 + 4096) * 2


def test_weight_only_quantization_computes_at_bf16(reg):
    est = roofkit.decode("llama-3.1-8b", "h100", precision="int4",
                         formats={"activations": "bf16"}, registry=reg)
    row = next(r for r in est.rows if r.node == "ffn.down")
    assert row.slot == "bf16"
    assert row.weight_bytes == 32 * 14336 * 4096 * 0.5
    # gpt-oss checkpoints: MXFP4 experts beside bf16 activations
    oss = roofkit.decode("gpt-oss-20b", "h100", registry=reg)
    assert {r.node: r.slot for r in oss.rows}["moe.experts_down"] == "bf16"


def test_checkpoint_formats_table_sets_expert_bytes(reg):
    fp = roofkit.footprint("gpt-oss-120b", registry=reg)
    experts = 36 * 128 * (2880 * 5760 + 5760 + 2880 * 2880 + 2880)
    assert fp.weights_by_role["experts"] == pytest.approx(experts * 4.25 / 8)
    nv = roofkit.footprint("gpt-oss-120b", registry=reg, formats={"experts": "nvfp4"})
    assert nv.weights_by_role["experts"] == pytest.approx(experts * 4.5 / 8)


def test_roofline_launch_adds_one_launch_per_node_instance(reg):
    plain = roofkit.decode("llama-3.1-8b", "h100", basis="datasheet", registry=reg)
    launched = roofkit.decode("llama-3.1-8b", "h100", cost_model="roofline_launch",
                              basis="datasheet", registry=reg)
    kernels = sum(r.count for r in plain.rows)
    assert launched.time - plain.time == pytest.approx(kernels * 5e-6)


def test_calibrated_basis_names_the_measurement(reg):
    est = roofkit.decode("llama-3.1-8b", "h100", basis="calibrated", registry=reg)
    assert est.measured is True
    assert est.basis.startswith("measured achievable for h100-sxm")
    sheet = roofkit.decode("llama-3.1-8b", "h100", basis="datasheet", registry=reg)
    assert sheet.measured is False
    assert est.time > sheet.time  # achievable bandwidth is below the datasheet's


def test_calibrated_without_a_measurement_says_so(reg):
    est = roofkit.decode("llama-3.1-8b", "mi250x", basis="calibrated", registry=reg)
    assert est.measured is False
    assert est.basis.startswith("no calibration for mi250x")
    assert "datasheet only" in est.basis


def test_fits_and_by_how_much(reg):
    fit = roofkit.fits("llama-3.1-8b", "h100", seqs=8, context=8192, registry=reg)
    # the H100's CUDA runtime total, 85,045,477,376 B (deviceQuery), x 0.9
    usable = 85_045_477_376 * 0.9
    assert fit.usable == pytest.approx(usable)
    assert fit.fits
    assert fit.margin == pytest.approx(usable - fit.required)
    assert fit.required == pytest.approx(fit.weights + 8 * 8192 * 131_072)
    assert fit.max_seqs == int((usable - fit.weights) // (8192 * 131_072))
    assert "gpu_memory_utilization" in fit.usable_reason


def test_qwen3_next_at_32_sequences_of_32k_does_not_fit_an_h200(reg):
    fit = roofkit.fits("qwen3-next-80b-a3b", "h200", seqs=32, context=32768, registry=reg)
    assert not fit.fits
    assert fit.margin < 0
    assert fit.to_dict()["fits"] is False


def test_encoders_have_no_decode_step(reg):
    with pytest.raises(ValueError, match="encoder"):
        roofkit.decode("bert-base", "h100", registry=reg)
    assert roofkit.prefill("bert-base", "h100", tokens=512, registry=reg).time > 0


def test_unknown_settings_and_names_teach(reg):
    with pytest.raises(UnknownNameError, match="basis"):
        roofkit.decode("llama-3.1-8b", "h100", bassis="calibrated", registry=reg)
    with pytest.raises(UnknownNameError, match="roofline"):
        roofkit.decode("llama-3.1-8b", "h100", cost_model="rofline", registry=reg)
    with pytest.raises(ValueError, match="batch"):
        roofkit.decode("llama-3.1-8b", "h100", batch=0, registry=reg)


def test_to_dict_is_json_ready(reg):
    import json

    many = roofkit.decode("llama-3.1-8b", "h100", batch=np.arange(1, 5), basis="datasheet",
                          registry=reg)
    d = json.loads(json.dumps(many.to_dict(by="op")))
    assert len(d["totals"]["time_s"]) == 4
    assert {"node", "op", "flops", "bytes", "time_s", "bound"} <= set(d["rows"][0])
    assert d["basis"].startswith("datasheet")


def test_generic_workloads_have_no_circuit(reg):
    with pytest.raises(roofkit.SpecError, match="generic"):
        roofkit.decode("resnet-50", "h100", registry=reg)


def test_step_energy_is_the_engine_power_model_over_the_step(reg):
    # E = TDP * (0.30 + 0.70 * HFU) * t, HFU against the datasheet peak of the main slot
    est = roofkit.decode("llama-3.1-8b", "h100", batch=32, context=1024, registry=reg)
    tdp, peak = 700.0, 989.4e12  # H100 SXM: 700 W, dense bf16 989.4 TFLOP/s (spec)
    hfu = min(est.flops / (est.time * peak), 1.0)
    assert est.utilization == pytest.approx(hfu)
    assert est.energy == pytest.approx(tdp * (0.30 + 0.70 * hfu) * est.time)
    assert est.to_dict()["totals"]["energy_j"] == pytest.approx(est.energy)
    # arrays of batch sizes give arrays of energies, each the scalar call's
    many = roofkit.decode("llama-3.1-8b", "h100", batch=np.array([1, 32]), context=1024,
                          registry=reg)
    assert many.energy[1] == pytest.approx(est.energy)
