"""Engine kernel profiles (``[[kernels]]`` of specs/engines): which kernel covers a node and
what it costs (roofkit.circuit.kernels)."""

import pytest

import roofkit
from roofkit.schema.engine import version_key


def _attention(est):
    return next(r for r in est.rows if r.op == "paged_attention")


def _decode(registry, workload, **kw):
    return roofkit.decode(workload, "h100-sxm", batch=16, context=2048, basis="calibrated",
                          registry=registry, **kw)


def test_masked_mha_reads_the_kv_cache_once_per_query_head(registry):
    # Llama-2-70B: 64 query heads over 8 KV heads, so masked MHA reads each KV head 8 times
    plain = _attention(_decode(registry, "llama-2-70b"))
    mmha = _attention(_decode(registry, "llama-2-70b", engine="tensorrt-llm",
                              engine_version="0.6.1"))
    assert float(mmha.kv_bytes) == pytest.approx(8 * float(plain.kv_bytes), rel=1e-3)
    assert float(mmha.time) > 4 * float(plain.time)


def test_xqa_covers_llama_2_70b_from_0_8_and_reads_each_kv_head_once(registry):
    plain = _attention(_decode(registry, "llama-2-70b"))
    xqa = _decode(registry, "llama-2-70b", engine="tensorrt-llm", engine_version="0.9.0")
    assert float(_attention(xqa).kv_bytes) == pytest.approx(float(plain.kv_bytes))
    assert "xqa" in xqa.basis


def test_xqa_shape_limits_leave_mistral_on_masked_mha_in_0_9(registry):
    # Mistral-7B: 32 query heads over 8 KV heads (4 per KV head), outside XQA's 8 in v0.9
    plain = _attention(_decode(registry, "mistral-7b"))
    v09 = _attention(_decode(registry, "mistral-7b", engine="tensorrt-llm",
                             engine_version="0.9.0"))
    v012 = _attention(_decode(registry, "mistral-7b", engine="tensorrt-llm"))
    assert float(v09.kv_bytes) == pytest.approx(4 * float(plain.kv_bytes), rel=1e-3)
    assert float(v012.kv_bytes) == pytest.approx(float(plain.kv_bytes))  # the profile's 0.12


def test_mmq_efficiency_is_the_one_pr_7676_measured(registry):
    """llama.cpp PR 7676: RTX 4090, llama 8B Q4_0, microbatch 512, pp512 = 10358.75 t/s.
    With every MMQ node compute-bound, t = t_other + F_gemm / (P_int8 * e), so
    e = F_gemm / (P_int8 * (512 / 10358.75 - t_other))."""
    est = roofkit.prefill("llama-3-8b", "rtx-4090", tokens=512, head=True, precision="q4_0",
                          engine="llama.cpp", basis="datasheet",
                          registry=registry)
    mmq = [r for r in est.rows if r.slot == "int8"]
    assert {r.node for r in mmq} >= {"attention.qkv", "attention.o", "ffn.gate_up",
                                     "ffn.down"}
    assert all(float(r.t_compute) >= float(r.t_memory) for r in mmq)
    f_gemm = sum(float(r.flops) for r in mmq)
    t_other = sum(float(r.time) for r in est.rows if r.slot != "int8")
    derived = f_gemm / (660.6e12 * (512 / 10358.75 - t_other))
    stored = registry.spec("engines", "llama.cpp").kernels[0].compute_efficiency
    assert stored == pytest.approx(derived, abs=0.0005)
    assert 512 / float(est.time) == pytest.approx(10358.75, rel=0.003)


def test_a_kernel_outside_its_measured_rows_says_so_and_widens_its_interval(registry):
    kw = dict(head=True, precision="q4_0", engine="llama.cpp", registry=registry)
    inside = roofkit.prefill("llama-3-8b", "rtx-4090", tokens=512, **kw)
    beyond = roofkit.prefill("llama-3-8b", "rtx-4090", tokens=8192, **kw)
    assert not inside.outside_profile_range
    assert beyond.outside_profile_range and beyond.to_dict()["outside_profile_range"]
    assert any("kernel mmq outside its measured range" in n and "512..2048" in n
               for n in beyond.notes)
    assert "range=outside" in beyond.interval().stratum


def test_a_kernel_on_a_slot_the_device_lacks_leaves_the_roofline_and_says_so(registry):
    # the DGX Spark spec lists no int8 peak, so MMQ's int8 slot cannot be costed there
    plain = roofkit.prefill("llama-3-8b", "dgx-spark", tokens=512, precision="q4_0",
                            registry=registry)
    est = roofkit.prefill("llama-3-8b", "dgx-spark", tokens=512, precision="q4_0",
                          engine="llama.cpp", registry=registry)
    assert float(est.time) == pytest.approx(float(plain.time))
    assert any("runs on the int8 slot, which dgx-spark does not list" in n for n in est.notes)


def test_a_format_without_a_kernel_keeps_the_roofline(registry):
    kw = dict(tokens=512, precision="fp16", registry=registry)
    plain = roofkit.prefill("llama-3-8b", "rtx-4090", **kw)
    est = roofkit.prefill("llama-3-8b", "rtx-4090", engine="llama.cpp", **kw)
    assert float(est.time) == pytest.approx(float(plain.time))


def test_serve_with_an_engine_of_specs_engines_uses_its_kernels(registry):
    from roofkit.serving import estimate

    kw = dict(batch=64, input_len=2048, output_len=64, tp=2, precision="fp8",
              kv_cache_dtype="fp8", registry=registry)
    v061 = estimate("llama-2-70b", "h100-sxm", engine="tensorrt-llm-session",
                    engine_version="0.6.1", **kw)
    v090 = estimate("llama-2-70b", "h100-sxm", engine="tensorrt-llm-session",
                    engine_version="0.9.0", **kw)
    assert v061.itl_ms > 1.5 * v090.itl_ms
    assert any("masked-mha" in n for n in v061.notes)
    # llama.cpp has kernels but no measured host time: the step's round trip is charged
    est = estimate("llama-3-8b", "rtx-4090", input_len=2048, output_len=1, precision="q4_0",
                   engine="llama.cpp", registry=registry)
    assert est.decode_host.source.startswith("launch.kernel_sync")


def test_an_unknown_engine_is_refused_naming_both_kinds_of_profile(registry):
    from roofkit.serving import estimate

    with pytest.raises(roofkit.UnknownNameError, match=r"llama\.cpp"):
        estimate("llama-3-8b", "h100", engine="llama.cp", registry=registry)


def test_leave_one_source_out_drops_a_measured_kernel_of_the_origin_only(registry):
    from roofkit.serving.loso import without

    sub, removed = without(registry, "github:ggml-org/llama.cpp")
    assert "engine:llama.cpp:kernels.mmq" in removed
    assert sub.spec("engines", "llama.cpp").kernels == []
    names = [k.name for k in sub.spec("engines", "tensorrt-llm").kernels]
    assert names == ["xqa", "masked-mha"]  # structural: no measured number to remove


@pytest.mark.parametrize("text, key", [("0.6.1", (0, 6, 1)), ("v0.9.0rc1", (0, 9, 0)),
                                       ("b3166", (3166,)), ("0.12", (0, 12)), ("x", ())])
def test_version_keys_compare_release_numbers(text, key):
    assert version_key(text) == key


HEAD = ('name = "x"\ndisplay_name = "X"\nversion = "1.0"\n[scheduler]\nsource = "https://a"\n'
        '[host]\n')


@pytest.mark.parametrize("kernel, key", [
    ('name = "k"\nop = "gemm"', "kernels[0].source"),
    ('name = "k"\nsource = "https://s"\nsince = "0.9"\nbefore = "0.7"', "kernels[0].before"),
    ('name = "k"\nsource = "https://s"\nformats = ["q4_zz"]', "kernels[0].formats"),
    ('name = "k"\nsource = "https://s"\ncompute_efficiency = 0.5', "kernels[0].where"),
    ('name = "k"\nsource = "https://s"\nkv_reads = "per_query_head"', "kernels[0].op"),
    ('name = "k"\nsource = "https://s"\nbatch_range = [64, 8]', "kernels[0].batch_range"),
])
def test_a_bad_kernel_profile_names_its_key(tmp_path, kernel, key):
    folder = tmp_path / "engines"
    folder.mkdir()
    (folder / "x.toml").write_text(HEAD + "[[kernels]]\n" + kernel + "\n", encoding="utf-8")
    with pytest.raises(roofkit.SpecError, match=key.replace(".", r"\.").replace("[", r"\[")):
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path])


def test_simulate_flags_steps_outside_a_kernels_measured_rows(registry):
    kw = dict(concurrency=16, requests=32, input_len=256, output_len=32, engine="vllm-v1",
              registry=registry)
    marlin = roofkit.simulate("llama-3.1-8b", "h100", precision="awq-int4-g128", **kw)
    plain = roofkit.simulate("llama-3.1-8b", "h100", **kw)
    assert marlin.outside_profile_range
    assert any(n.startswith("kernel marlin outside its measured range") for n in marlin.notes)
    # the plain run uses no kernel profile (its flag, if any, is the V1 host time's range)
    assert not any(n.startswith("kernel ") for n in plain.notes)


def test_a_kernel_format_given_by_an_alias_matches(tmp_path):
    folder = tmp_path / "engines"
    folder.mkdir()
    (folder / "x.toml").write_text(
        HEAD + '[[kernels]]\nname = "k"\nop = "gemm"\nformats = ["gguf-q4_0"]\nslot = "int8"\n'
        'compute_efficiency = 0.5\nsource = "https://s"\nwhere = "w"\n', encoding="utf-8")
    reg = roofkit.build_registry(entry_points=False, spec_paths=[tmp_path])
    est = roofkit.prefill("llama-3-8b", "rtx-4090", tokens=512, precision="q4_0", engine="x",
                          registry=reg)
    assert {r.slot for r in est.rows if r.op == "linear"} == {"int8"}


def test_an_engine_version_without_numbers_is_refused(registry):
    from roofkit.errors import ArgumentError

    with pytest.raises(ArgumentError, match="'abc' of tensorrt-llm is not a version"):
        roofkit.decode("llama-3-8b", "h100-sxm", batch=1, context=128, precision="fp16",
                       engine="tensorrt-llm", engine_version="abc", registry=registry)


def _mi300x_decode(registry, **kw):
    return roofkit.decode("llama-3.1-70b", "mi300x", tp=8, precision="fp8", kv_cache_dtype="fp8",
                          batch=64, context=2048, basis="calibrated", registry=registry,
                          **kw)


def test_vllm_v1_decodes_on_amd_with_the_rocm_paged_attention_kernel(registry):
    # Llama-3.1-70B: 64 query heads over 8 KV heads, head size 128: inside the kernel's
    # shapes (1..16 query heads per KV head, head size 64 or 128) from 0.8.4 on
    v010 = _mi300x_decode(registry, engine="vllm", engine_version="0.10.0")
    assert "rocm-custom-paged-attention" in v010.basis
    assert "rocm-custom-paged-attention" not in _mi300x_decode(
        registry, engine="vllm", engine_version="0.8.3").basis
    on_h100 = roofkit.decode("llama-3.1-70b", "h100-sxm", tp=8, precision="fp8",
                             kv_cache_dtype="fp8", batch=64, context=2048, basis="calibrated",
                             registry=registry, engine="vllm", engine_version="0.10.0")
    assert "rocm-custom-paged-attention" not in on_h100.basis


def test_the_rocm_paged_attention_profile_is_structural_and_keeps_the_roofline(registry):
    # one KV read per KV head and no measured efficiency: the attention node costs what the
    # roofline charges without the profile (the version before it)
    k = next(k for k in registry.spec("engines", "vllm-v1").kernels
             if k.name == "rocm-custom-paged-attention")
    assert not k.measured and k.modes == ["decode"]
    with_k = _attention(_mi300x_decode(registry, engine="vllm", engine_version="0.10.0"))
    without = _attention(_mi300x_decode(registry, engine="vllm", engine_version="0.8.3"))
    assert float(with_k.kv_bytes) == pytest.approx(float(without.kv_bytes))
    assert float(with_k.time) == pytest.approx(float(without.time))


def _triton_mxfp4(registry):
    return next(k for k in registry.spec("engines", "sglang").kernels
                if k.name == "triton-mxfp4-moe")


def test_triton_mxfp4_moe_efficiency_is_the_h100_reproducers_64_row_time(registry):
    """triton-lang/triton repro_hopper_mxfp4_ptxas.py (21a0ce7c): H100, BF16 x MXFP4 grouped
    matmul, 256 experts, K=2048, N=4096, 64 rows routed to one uniform random expert each,
    121.5 us (ptxas 13.2). Memory-bound: e = bytes / (t * BW_h100)."""
    experts, k, n, rows, t = 256, 2048, 4096, 64, 121.5e-6
    touched = experts * (1 - (1 - 1 / experts) ** rows)           # 56.72 experts
    assert touched == pytest.approx(56.72, abs=0.01)
    per_expert = n * k * 4.25 / 8                                   # E2M1 + E8M0 per 32
    assert per_expert == 4_456_448
    nbytes = touched * per_expert + rows * k * 2 + rows * n * 2     # + BF16 in and out
    assert nbytes == pytest.approx(253.58e6, rel=1e-4)
    bw = 2.97e12                                                    # h100-sxm calibration
    assert registry.spec("calibration", "h100-sxm").bandwidth.value == pytest.approx(bw)
    derived = nbytes / t / bw
    assert derived == pytest.approx(0.703, abs=0.0005)
    assert 2 * rows * k * n / t < 0.02 * 794.5e12                  # far from compute-bound
    kern = _triton_mxfp4(registry)
    assert kern.memory_efficiency == pytest.approx(derived, abs=0.0005)
    assert kern.compute_efficiency == 1.0 and kern.slot == "bf16"
    assert kern.batch_range == [64, 512]
    # the file's 512-row time, 431.5 us, streams at 0.775: the entry keeps the decode end
    touched = experts * (1 - (1 - 1 / experts) ** 512)
    e512 = (touched * per_expert + 512 * k * 2 + 512 * n * 2) / 431.5e-6 / bw
    assert e512 == pytest.approx(0.775, abs=0.001)


@pytest.mark.parametrize("device", ["h200", "h100-sxm"])
def test_sglang_streams_gpt_oss_experts_on_hopper_at_the_measured_fraction(registry, device):
    kw = dict(batch=64, context=2048, basis="calibrated", registry=registry)
    plain = roofkit.decode("gpt-oss-120b", device, **kw)
    sgl = roofkit.decode("gpt-oss-120b", device, engine="sglang", **kw)
    by = {r.node: r for r in plain.rows}
    experts = [r for r in sgl.rows if r.node in ("moe.experts_gate_up", "moe.experts_down")]
    assert len(experts) == 2
    for r in experts:
        assert r.slot == "bf16"  # Hopper upcasts MXFP4 and multiplies on BF16 tensor cores
        assert float(r.bytes) == pytest.approx(float(by[r.node].bytes))
        assert float(r.t_memory) == pytest.approx(float(by[r.node].t_memory) / 0.703, rel=1e-3)
    # the 16-bit attention projections are not MXFP4: no kernel covers them
    qkv = next(r for r in sgl.rows if r.node == "attention.qkv")
    assert float(qkv.time) == pytest.approx(float(by["attention.qkv"].time))
    assert "triton-mxfp4-moe" in sgl.basis and not sgl.outside_profile_range


def test_triton_mxfp4_moe_is_hopper_only_and_flags_decode_below_64_rows(registry):
    kw = dict(context=2048, basis="calibrated", registry=registry, engine="sglang")
    b200 = roofkit.decode("gpt-oss-120b", "b200", batch=64, **kw)
    assert "triton-mxfp4-moe" not in b200.basis
    small = roofkit.decode("gpt-oss-120b", "h200", batch=16, **kw)
    assert small.outside_profile_range
    assert any("kernel triton-mxfp4-moe outside its measured range" in n and "64..512" in n
               for n in small.notes)


def _marlin_mxfp4(registry, engine="vllm-v1"):
    return next(k for k in registry.spec("engines", engine).kernels
                if k.name == "marlin-mxfp4-moe")


def test_marlin_mxfp4_moe_efficiency_is_the_h100_in_server_timing(registry):
    """sglang PR #38884: H100, Marlin W4A16 MoE, 16384-token prefill chunks, '1.237 TFLOP per
    layer per GPU in 4.863 ms' (209.1 ms over 43 layers). The TFLOP: DeepSeek-V4-Flash's
    experts (hidden 4096, intermediate 2048, top 6; sglang PR #34682), gate_up and down, split
    over 4 GPUs: 2 x 6 x 3 x 4096 x 2048 x 16384 / 4. Compute-bound: e = rate / MAMF."""
    flops = 2 * 6 * 3 * 4096 * 2048 * 16384 / 4
    assert flops == pytest.approx(1.237e12, rel=1e-3)
    per_layer = 209.1e-3 / 43                                       # s, 43 layers
    assert per_layer == pytest.approx(4.863e-3, rel=1e-3)
    rate = 1.237e12 / 4.863e-3
    mamf = 794.5e12                                                 # h100-sxm compute.bf16
    assert registry.spec("calibration", "h100-sxm").compute["bf16"].value == pytest.approx(mamf)
    for engine in ("vllm-v1", "vllm-v1-async"):
        kern = _marlin_mxfp4(registry, engine)
        assert kern.compute_efficiency == pytest.approx(rate / mamf, abs=0.0005)
        assert kern.memory_efficiency == 1.0 and kern.slot == "bf16"
        assert kern.formats == ["mxfp4"] and kern.devices == ["h100-sxm", "h200"]
        assert kern.before == "0.11.1" and kern.batch_range == [16384, 16384]


def test_vllm_prefills_gpt_oss_experts_on_hopper_at_the_marlin_fraction(registry):
    kw = dict(basis="calibrated", registry=registry)
    plain = roofkit.prefill("gpt-oss-20b", "h100-sxm", tokens=16384, **kw)
    vllm = roofkit.prefill("gpt-oss-20b", "h100-sxm", tokens=16384,
                           engine="vllm-v1", **kw)
    by = {r.node: r for r in plain.rows}
    experts = [r for r in vllm.rows if r.node in ("moe.experts_gate_up", "moe.experts_down")]
    assert len(experts) == 2
    for r in experts:
        assert r.slot == "bf16"
        assert float(r.t_compute) == pytest.approx(float(by[r.node].t_compute) / 0.320, rel=1e-3)
    assert "marlin-mxfp4-moe" in vllm.basis
    # from 0.11.1 vLLM defaults to triton_kernels on Hopper: the entry no longer applies
    later = roofkit.prefill("gpt-oss-20b", "h100-sxm", tokens=16384,
                            engine="vllm-v1", engine_version="0.11.1", **kw)
    assert "marlin-mxfp4-moe" not in later.basis


def test_marlin_mxfp4_moe_on_the_a100_is_the_sm80_marlin_sweep(registry):
    """vLLM PR #2497, resorcap's IST-DASLab bench.py sweep: 141.152, 141.425 and 141.124
    TFLOP/s at 1024, 2048 and 4000 rows, speedups over torch's FP16 matmul 0.66, 0.60, 0.61;
    torch at 141.124 / 0.61 = 231 TFLOP/s puts the board in the A100 class."""
    rates = [141.152e12, 141.425e12, 141.124e12]
    torch_rate = 141.124e12 / 0.61
    assert 220e12 < torch_rate < 312e12                        # above any A10/A6000/3090 peak
    mamf = registry.spec("calibration", "a100-80gb").compute["bf16"].value
    assert mamf == pytest.approx(271.2e12)
    for engine in ("vllm-v1", "vllm-v1-async"):
        kern = next(k for k in registry.spec("engines", engine).kernels
                    if k.name == "marlin-mxfp4-moe-a100")
        assert kern.compute_efficiency == pytest.approx(sum(rates) / 3 / mamf, abs=0.0005)
        assert kern.formats == ["mxfp4"] and kern.slot == "bf16" and not kern.before
        assert kern.batch_range == [1024, 4000] and "a100-80gb" in kern.devices
    # a 2048-token prefill: the experts' math runs at 0.521 of the BF16 MAMF
    vllm = roofkit.prefill("gpt-oss-20b", "a100-80gb", tokens=2048, engine="vllm-v1",
                           basis="calibrated", registry=registry)
    experts = [r for r in vllm.rows if r.node in ("moe.experts_gate_up", "moe.experts_down")]
    assert len(experts) == 2
    for r in experts:
        assert float(r.flops) / float(r.t_compute) == pytest.approx(0.521 * mamf, rel=1e-3)
    assert "marlin-mxfp4-moe-a100" in vllm.basis
