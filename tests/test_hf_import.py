"""Hugging Face import: real config.json files become workloads whose derived parameter counts
match the published ones, quantization configs become formats, and what the templates cannot
express is refused naming the key."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

import roofkit
from roofkit.circuit.stats import workload_stats
from roofkit.cli import main
from roofkit.errors import SpecError, UnknownNameError
from roofkit.importers import workload_from_hf, workload_table

HF = Path(__file__).parent / "data" / "hf"

# (folder, published count, which count, citation). "total" compares the derived params,
# "non_embedding" params less the embedding table (as the card states it).
PUBLISHED = [
    ("llama-2-7b", 6.74e9, "total", "https://huggingface.co/meta-llama/Llama-2-7b-hf: "
     "safetensors 6.74B params"),
    ("llama-3.1-8b", 8.03e9, "total", "https://huggingface.co/meta-llama/Llama-3.1-8B: 8.03B"),
    ("llama-3.2-1b", 1.23e9, "total", "https://huggingface.co/meta-llama/Llama-3.2-1B: model "
     "information table, 1.23B params"),
    ("mistral-7b-v0.3", 7.25e9, "total", "https://huggingface.co/mistralai/Mistral-7B-v0.3: "
     "safetensors 7.25B params"),
    ("gpt2", 124e6, "total", "https://huggingface.co/openai-community/gpt2: 'the smallest "
     "version of GPT-2, with 124M parameters'"),
    ("gpt2-medium", 355e6, "total", "https://huggingface.co/openai-community/gpt2-medium: "
     "'GPT-2 Medium is the 355M parameter version of GPT-2'"),
    ("mixtral-8x7b", 46.7e9, "total", "https://mistral.ai/news/mixtral-of-experts: 46.7B "
     "total parameters"),
    ("phi-3.5-mini", 3.8e9, "total", "https://huggingface.co/microsoft/Phi-3.5-mini-instruct: "
     "3.8B parameters"),
    ("qwen1.5-moe-a2.7b", 14.3e9, "total", "https://huggingface.co/Qwen/Qwen1.5-MoE-A2.7B "
     "(and the Qwen blog post): 14.3B parameters in total, 2.7B activated"),
    ("deepseek-v2-lite", 15.7e9, "total", "https://huggingface.co/deepseek-ai/DeepSeek-V2-Lite:"
     " 15.7B total parameters, 2.4B activated"),
    ("gemma-2b", 2_506_434_560, "total", "Gemma report (arXiv 2403.08295) Table 2: 524,550,144 "
     "embedding + 1,981,884,416 non-embedding"),
    ("gemma-2-2b", 2_614_341_888, "total", "Gemma 2 report (arXiv 2408.00118) Table 2: "
     "590,118,912 embedding + 2,024,517,888 non-embedding"),
    ("gemma-2-9b", 9_241_705_984, "total", "Gemma 2 report (arXiv 2408.00118) Table 2: "
     "917,504,000 embedding + 8,324,201,984 non-embedding"),
    ("qwen2.5-3b", 3.09e9, "total", "https://huggingface.co/Qwen/Qwen2.5-3B: Number of "
     "Parameters 3.09B"),
    ("qwen3-0.6b", 0.44e9, "non_embedding", "https://huggingface.co/Qwen/Qwen3-0.6B: Number of "
     "Parameters (Non-Embedding) 0.44B"),
    ("qwen3-8b", 8.2e9, "total", "https://huggingface.co/Qwen/Qwen3-8B: Number of Parameters "
     "8.2B"),
    ("gpt-j-6b", 6_053_381_344, "total", "https://huggingface.co/EleutherAI/gpt-j-6b: "
     "n_parameters 6053381344"),
    ("snowflake-arctic-embed-m", 110e6, "total", "https://huggingface.co/Snowflake/"
     "snowflake-arctic-embed-m: model table, 110 M params"),
    ("qwen3-30b-a3b", 30.5e9, "total", "https://huggingface.co/Qwen/Qwen3-30B-A3B: 30.5B in "
     "total"),
    ("qwen3-235b-a22b", 235e9, "total", "https://huggingface.co/Qwen/Qwen3-235B-A22B: 235B in "
     "total"),
    ("qwen3-next-80b-a3b", 80e9, "total", "https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-"
     "Instruct: 80B in total"),
    ("deepseek-v3", 671e9, "total", "DeepSeek-V3 report (arXiv 2412.19437) abstract: 671B "
     "total parameters"),
    ("gpt-oss-20b", 21e9, "total", "https://huggingface.co/openai/gpt-oss-20b: 21B "
     "parameters"),
    ("mamba2-2.7b", 2.7e9, "total", "Mamba-2 paper (arXiv 2405.21060): the Mamba-2 2.7B "
     "model (https://huggingface.co/state-spaces/mamba2-2.7b)"),
]

# imported folders whose dims are the catalogue workload's: the same circuit, the same count
SAME_AS_CATALOGUE = [
    ("llama-3.1-8b", "llama-3.1-8b"), ("gemma-2-9b", "gemma-2-9b"), ("gpt2", "gpt2"),
    ("gpt-j-6b", "gpt-j-6b"), ("mixtral-8x7b", "mixtral-8x7b"),
    ("qwen3-30b-a3b", "qwen3-30b-a3b"), ("qwen3-235b-a22b", "qwen3-235b-a22b"),
    ("qwen3-next-80b-a3b", "qwen3-next-80b-a3b"), ("deepseek-v3", "deepseek-v3"),
    ("gpt-oss-20b", "gpt-oss-20b"), ("mamba-2.8b-hf", "mamba-2.8b"),
    ("mamba2-2.7b", "mamba2-2.7b"),
]


def _config(folder: str) -> dict:
    return json.loads((HF / folder / "config.json").read_text())


def test_at_least_fifteen_models_of_the_mapped_families_are_tested():
    from roofkit.importers.hf_arch import model_type_of

    families = {model_type_of(_config(f), f) for f, *_ in PUBLISHED}
    assert len(PUBLISHED) >= 15
    assert {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "phi3", "mixtral",
            "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "gpt_oss", "qwen3_next",
            "gpt2", "gptj", "bert", "mamba2"} <= families
    # Falcon-7B's and Mamba-2.8B's only published counts are the rounded sizes of their
    # names ("7B", "2.8B"), 1.1 % from the shapes' count: their real configs are checked
    # against the module shapes (falcon) and the catalogue workload (mamba) instead
    assert model_type_of(_config("falcon-7b-instruct"), "falcon-7b-instruct") == "falcon"
    assert model_type_of(_config("mamba-2.8b-hf"), "mamba-2.8b-hf") == "mamba"


@pytest.mark.parametrize(("folder", "published", "which", "cite"), PUBLISHED,
                         ids=[p[0] for p in PUBLISHED])
def test_derived_parameters_are_within_one_percent_of_the_published_count(
        registry, folder, published, which, cite):
    w = workload_from_hf(HF / folder / "config.json", registry=registry)
    s = workload_stats(w, registry)
    got = s.params if which == "total" else s.params - s.embedding_params
    assert got == pytest.approx(published, rel=0.01), cite


@pytest.mark.parametrize(("folder", "name"), SAME_AS_CATALOGUE)
def test_an_imported_config_lowers_to_the_catalogue_workload_of_the_same_model(
        registry, folder, name):
    imported = workload_stats(workload_from_hf(HF / folder, registry=registry), registry)
    catalogue = workload_stats(name, registry)
    assert imported.params == pytest.approx(catalogue.params, rel=1e-9)
    assert imported.active_params == pytest.approx(catalogue.active_params, rel=1e-9)
    assert imported.kv_bytes_per_token_bf16 == catalogue.kv_bytes_per_token_bf16


def test_every_number_the_table_sets_has_a_source(registry):
    table = workload_table(HF / "gemma-2-2b")
    assert table["provenance"]["dims"] == "config"
    # a dim the config leaves out is sourced to the transformers default it takes
    assert "Gemma2Config defaults it to true" in table["provenance"]["dims.tie_embeddings"]
    assert table["dims"]["sliding_window"] == 4096
    assert table["dims"]["sliding_every"] == 2
    assert table["dims"]["sandwich_norm"] == 1


def test_without_q_lora_rank_mla_projects_queries_straight_from_hidden(registry):
    w = workload_from_hf(HF / "deepseek-v2-lite", registry=registry)
    assert w.dims["q_lora_rank"] == 0
    model = roofkit.circuit.model.build_model(w, registry)
    ids = {n.id for n in model.nodes}
    assert "q" in {i.rsplit(".", 1)[-1] for i in ids}
    assert not any(i.endswith("q_a") for i in ids)
    # q_proj: hidden x heads * (qk_nope + qk_rope) = 2048 x 16 * 192 per layer
    q = next(n for n in model.nodes if n.id.endswith(".q") and n.section == "main")
    assert model.memory[q.id].params == 2048 * 16 * 192


def test_gemma2_layer_types_and_gpt_oss_layer_types_give_the_alternating_window(registry):
    w = workload_from_hf(HF / "gpt-oss-20b", registry=registry)
    assert (w.dims["sliding_window"], w.dims["sliding_every"]) == (128, 2)


# ---------------------------------------------------------------- quantization
def test_fp8_block_quantization_becomes_the_default_format(registry):
    w = workload_from_hf(HF / "deepseek-v3", registry=registry)
    assert w.formats == {"default": "fp8"}
    assert "weight_block_size [128, 128]" in w.provenance["formats"]


def test_mxfp4_quantizes_the_experts_and_keeps_excluded_modules_in_bf16(registry):
    w = workload_from_hf(HF / "gpt-oss-20b", registry=registry)
    assert w.formats["experts"] == "mxfp4"
    assert w.formats["attention"] == w.formats["router"] == w.formats["lm_head"] == "bf16"
    assert "default" not in w.formats  # the rest stays in the checkpoint's bf16


def _with(folder: str, **extra) -> dict:
    return {**_config(folder), **extra}


def test_awq_int4_names_the_group_scaled_format_with_its_real_bytes(registry):
    cfg = _with("llama-3.1-8b", quantization_config={
        "quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
        "version": "gemm"})
    w = workload_from_hf(cfg, registry=registry)
    assert w.formats == {"default": "awq-int4-g128"}
    assert "group_size 128" in w.provenance["formats"]
    # AWQ int4 g128: 4 + (16-bit scale + 4-bit zero) / 128 bits a weight, bf16 16 bits
    q4 = roofkit.footprint(w, registry=registry).weights_by_role
    bf16 = roofkit.footprint("llama-3.1-8b", registry=registry).weights_by_role
    assert q4["mlp"] == pytest.approx(bf16["mlp"] * (4 + 20 / 128) / 16)
    assert q4["lm_head"] == bf16["lm_head"]  # the template keeps the head in bf16


def test_gptq_with_eight_bits_and_excluded_modules(registry):
    cfg = _with("qwen2.5-3b", quantization_config={
        "quant_method": "gptq", "bits": 8, "group_size": 32, "desc_act": False,
        "modules_to_not_convert": ["lm_head", "model.layers.*.mlp.down_proj",
                                   "model.layers.3.self_attn"]})
    w = workload_from_hf(cfg, registry=registry)
    assert w.formats == {"default": "gptq-int8-g32", "lm_head": "bf16"}
    # a module kept in 16 bits on some layers, or one projection of a role, is no role of
    # its own: the notes say so instead of hiding it
    assert "model.layers.3.self_attn" in w.notes and "mlp.down_proj" in w.notes


def test_a_gptq_group_no_format_describes_is_refused_naming_the_key(registry):
    cfg = _with("qwen2.5-3b", quantization_config={"quant_method": "gptq", "bits": 4,
                                                   "group_size": -1})
    with pytest.raises(SpecError, match=r"quantization_config\.group_size"):
        workload_from_hf(cfg, registry=registry)


def test_a_modelopt_nvfp4_folder_sets_weights_activations_and_kv(tmp_path, registry):
    (tmp_path / "config.json").write_text(json.dumps(_config("llama-3.1-8b")))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({
        "producer": {"name": "modelopt", "version": "0.19.0"},
        "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8",
                         "group_size": 16, "exclude_modules": ["lm_head"]}}))
    w = workload_from_hf(tmp_path, registry=registry)
    assert w.formats == {"default": "nvfp4", "kv": "fp8", "lm_head": "bf16"}
    assert w.provenance["formats"].startswith("quant_config:")


def test_compressed_tensors_fp8_w8a8(registry):
    cfg = _with("llama-3.1-8b", quantization_config={
        "quant_method": "compressed-tensors", "format": "float-quantized",
        "config_groups": {"group_0": {
            "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
            "input_activations": {"num_bits": 8, "type": "float", "dynamic": True},
            "targets": ["Linear"]}},
        "ignore": ["lm_head"]})
    assert workload_from_hf(cfg, registry=registry).formats == {"default": "fp8",
                                                                "lm_head": "bf16"}


def test_an_unknown_quant_method_is_refused_naming_the_key(registry):
    cfg = _with("llama-3.1-8b", quantization_config={"quant_method": "hqq", "nbits": 4})
    with pytest.raises(SpecError) as exc:
        workload_from_hf(cfg, registry=registry)
    assert "quantization_config.quant_method" in str(exc.value)
    assert "'hqq'" in str(exc.value)


# ---------------------------------------------------------------- refusals
def test_an_unknown_model_type_is_refused_naming_the_key_and_the_mapped_ones(registry):
    with pytest.raises(SpecError) as exc:
        workload_from_hf({"model_type": "rwkv5", "hidden_size": 2560}, registry=registry)
    text = str(exc.value)
    assert "model_type 'rwkv5' is not mapped" in text and "qwen3_moe" in text
    assert "@ <config dict>:model_type" in text


def test_a_cost_key_the_mapper_does_not_read_is_refused_naming_it(registry):
    cfg = _with("llama-3.1-8b", num_local_experts=8)
    with pytest.raises(SpecError) as exc:
        workload_from_hf(cfg, registry=registry)
    assert "num_local_experts = 8 changes the cost" in str(exc.value)


def test_qwen_sliding_window_on_some_layers_only_is_refused(registry):
    cfg = _with("qwen2.5-3b", use_sliding_window=True)
    with pytest.raises(SpecError) as exc:
        workload_from_hf(cfg, registry=registry)
    assert ":use_sliding_window" in str(exc.value)


def test_a_layer_pattern_no_sliding_every_expresses_is_refused(registry):
    types = ["sliding_attention"] * 5 + ["full_attention"]  # Gemma-3's 5 local : 1 global
    cfg = _with("gemma-2-2b", layer_types=types * 4 + types[:2], num_hidden_layers=26)
    with pytest.raises(SpecError) as exc:
        workload_from_hf(cfg, registry=registry)
    assert ":layer_types" in str(exc.value)


def test_a_missing_required_key_is_named(registry):
    cfg = {k: v for k, v in _config("mistral-7b-v0.3").items() if k != "hidden_size"}
    with pytest.raises(SpecError) as exc:
        workload_from_hf(cfg, registry=registry)
    assert "'hidden_size'" in str(exc.value)


def test_a_config_that_is_not_json_is_a_spec_error_naming_the_file(tmp_path, registry):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(SpecError) as exc:
        workload_from_hf(bad, registry=registry)
    assert str(bad) in str(exc.value)


# ---------------------------------------------------------------- state-space configs
def test_a_native_mamba_ssm_config_without_model_type_is_read_as_mamba2(registry):
    cfg = {"d_model": 2560, "d_intermediate": 0, "n_layer": 64, "vocab_size": 50277,
           "ssm_cfg": {"layer": "Mamba2"}, "attn_layer_idx": [], "attn_cfg": {},
           "rms_norm": True, "residual_in_fp32": True, "fused_add_norm": True,
           "pad_vocab_size_multiple": 16, "tie_embeddings": True}
    w = workload_from_hf(cfg, registry=registry)
    assert w.template == "mamba2"
    # the mamba_ssm Mamba2 defaults: d_state 128, headdim 64 -> 2 * 2560 / 64 = 80 heads
    assert (w.dims["ssm_state"], w.dims["mamba_heads"], w.dims["vocab_pad_multiple"]) == \
        (128, 80, 16)
    assert workload_stats(w, registry).params == pytest.approx(
        workload_stats("mamba2-2.7b", registry).params, rel=1e-9)


def test_mamba_with_attention_layers_is_refused(registry):
    cfg = {"d_model": 2560, "n_layer": 64, "vocab_size": 50277, "ssm_cfg": {"layer": "Mamba2"},
           "attn_layer_idx": [9, 18]}
    with pytest.raises(SpecError) as exc:
        workload_from_hf(cfg, registry=registry)
    assert ":attn_layer_idx" in str(exc.value)


# ---------------------------------------------------------------- folders and the registry
def _write_safetensors(path: Path, shapes: dict[str, list[int]]) -> None:
    header = {k: {"dtype": "BF16", "shape": s, "data_offsets": [0, 0]} for k, s in shapes.items()}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)


def test_the_stored_count_comes_from_the_safetensors_headers(tmp_path, registry):
    (tmp_path / "config.json").write_text(json.dumps(_config("gpt2")))
    # GPT-2's tensors by their shapes (wte, wpe, and the rest as one flat block) so that the
    # stored count is within 2 % of the derived one, as an import is checked against it
    shapes = {"wte": [50257, 768], "wpe": [1024, 768], "rest": [84_953_088]}
    _write_safetensors(tmp_path / "model.safetensors", shapes)
    w = workload_from_hf(tmp_path, registry=registry)
    assert w.published.params == 50257 * 768 + 1024 * 768 + 84_953_088
    assert "safetensors" in w.sources


def test_without_shards_the_index_total_size_is_divided_by_the_dtype_size(tmp_path, registry):
    (tmp_path / "config.json").write_text(json.dumps(_config("llama-3.1-8b")))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({
        "metadata": {"total_size": 16060522496},
        "weight_map": {"lm_head.weight": "model-00004-of-00004.safetensors"}}))
    w = workload_from_hf(tmp_path, registry=registry)
    assert w.published.params == 16060522496 / 2  # torch_dtype bfloat16
    assert "total_size" in w.provenance["published.params"]


def test_a_folder_or_config_path_works_wherever_a_workload_is_named(registry):
    folder = HF / "qwen2.5-3b"
    assert registry.workload(folder).name == "qwen2.5-3b"
    assert registry.workload(str(folder / "config.json")) is registry.workload(folder / \
                                                                               "config.json")
    est = roofkit.decode(str(folder), "h100", batch=4, context=512, registry=registry)
    assert est.workload == "qwen2.5-3b"


def test_a_hub_id_resolves_through_the_local_hub_cache(tmp_path, monkeypatch, registry):
    snap = tmp_path / "models--acme--Tiny-GPT2" / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(_config("gpt2")))
    (tmp_path / "models--acme--Tiny-GPT2" / "refs").mkdir()
    (tmp_path / "models--acme--Tiny-GPT2" / "refs" / "main").write_text("a" * 40)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # read at each lookup
    w = registry.workload("acme/Tiny-GPT2")
    assert w.name == "tiny-gpt2" and w.aliases == ("acme/Tiny-GPT2",)
    assert w.sources["config"] == "https://huggingface.co/acme/Tiny-GPT2/blob/main/config.json"


def test_a_hub_id_missing_from_the_cache_says_where_it_looked(tmp_path, monkeypatch,
                                                             registry):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(UnknownNameError) as exc:
        registry.workload("acme/Not-Downloaded")
    assert "Hugging Face cache" in str(exc.value) and str(tmp_path) in str(exc.value)


def test_a_catalogue_alias_wins_over_the_hub_cache(registry):
    assert registry.workload("meta-llama/Llama-3.1-8B").name == "llama-3.1-8b"


# ---------------------------------------------------------------- CLI
def test_import_hf_writes_a_toml_that_loads_back_to_the_same_model(tmp_path, capsys, registry):
    out = tmp_path / "mixtral.toml"
    assert main(["import-hf", str(HF / "mixtral-8x7b"), "-o", str(out)]) == 0
    assert "46.7 B parameters derived" in capsys.readouterr().err
    loaded = registry.workload(out)
    assert workload_stats(loaded, registry).params == pytest.approx(46.7e9, rel=0.01)
    assert main(["check", str(out)]) == 0


def test_serve_takes_a_config_json_path_and_answers_json(capsys):
    assert main(["serve", str(HF / "qwen3-0.6b" / "config.json"), "h100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["workload"] == "qwen3-0.6b"


def test_import_hf_of_an_unmapped_model_exits_one_naming_the_key(tmp_path, capsys):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "rwkv5"}))
    assert main(["import-hf", str(cfg)]) == 1
    assert "model_type 'rwkv5' is not mapped" in capsys.readouterr().err


# ---------------------------------------------------------------- Falcon
# FalconConfig keys (transformers configuration_falcon.py) with the values the catalogue's
# falcon-180b.toml cites from the TensorRT-LLM Falcon-180B config
FALCON_180B = {"model_type": "falcon", "architectures": ["FalconForCausalLM"],
               "hidden_size": 14848, "num_attention_heads": 232, "num_hidden_layers": 80,
               "num_kv_heads": 8, "new_decoder_architecture": True, "parallel_attn": True,
               "bias": False, "alibi": False, "vocab_size": 65024,
               "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}


def test_falcon_new_decoder_architecture_lowers_to_the_catalogue_falcon_180b(registry):
    w = workload_from_hf(FALCON_180B, registry=registry)
    assert (w.dims["kv_heads"], w.dims["head_dim"], w.dims["ffn"]) == (8, 64, 4 * 14848)
    assert workload_stats(w, registry).params == pytest.approx(
        workload_stats("falcon-180b", registry).params, rel=1e-9)


def test_falcon_7b_multi_query_shares_one_kv_head(registry):
    cfg = {"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71,
           "num_hidden_layers": 32, "multi_query": True, "new_decoder_architecture": False,
           "parallel_attn": True, "bias": False, "alibi": False, "vocab_size": 65024}
    w = workload_from_hf(cfg, registry=registry)
    assert w.dims["kv_heads"] == 1 and "parallel attention" in w.notes
    # per layer: query_key_value 4544 x (71 + 2) * 64, dense 4544^2, the 4x MLP 2 * 4544 *
    # 18176, two LayerNorms (weight and bias) of 4544; tied 65024 x 4544 embedding, final norm
    layer = 4544 * 73 * 64 + 4544**2 + 2 * 4544 * 18176 + 2 * 2 * 4544
    assert workload_stats(w, registry).params == 32 * layer + 65024 * 4544 + 2 * 4544


def test_the_real_falcon_7b_config_is_multi_query_with_the_module_shapes(registry):
    # tiiuae/falcon-7b-instruct's config (the architecture of falcon-7b): multi_query wins
    # over the num_kv_heads FalconConfig fills in; the count is the modules' shapes
    # (transformers modeling_falcon.py), which the card rounds to "7B" (1.1 % above)
    w = workload_from_hf(HF / "falcon-7b-instruct", registry=registry)
    assert (w.dims["kv_heads"], w.dims["head_dim"], w.dims["ffn"]) == (1, 64, 4 * 4544)
    layer = 4544 * 73 * 64 + 4544**2 + 2 * 4544 * 18176 + 2 * 2 * 4544
    params = workload_stats(w, registry).params
    assert params == 32 * layer + 65024 * 4544 + 2 * 4544
    assert params == pytest.approx(7e9, rel=0.015)


def test_falcon_alibi_is_refused(registry):
    with pytest.raises(SpecError, match=r":alibi"):
        workload_from_hf({**FALCON_180B, "alibi": True}, registry=registry)


def test_import_hf_takes_a_registry_key(tmp_path, capsys):
    out = tmp_path / "w.toml"
    assert main(["import-hf", str(HF / "gpt2"), "--name", "my-gpt2", "-o", str(out)]) == 0
    assert 'name = "my-gpt2"' in out.read_text()


@pytest.mark.parametrize(("change", "key"), [
    ({"hidden_size": "4096"}, "hidden_size"),
    ({"num_attention_heads": 0}, "num_attention_heads"),
    ({"num_hidden_layers": float("nan")}, "num_hidden_layers"),
    ({"tie_word_embeddings": "yes"}, "tie_word_embeddings"),
    ({"sliding_window": [4096]}, "sliding_window"),
])
def test_a_malformed_value_is_a_spec_error_naming_the_key(registry, change, key):
    with pytest.raises(SpecError) as exc:
        workload_from_hf(_with("mistral-7b-v0.3", **change), registry=registry)
    assert f":{key}" in str(exc.value)


@pytest.mark.parametrize("cfg", [
    {"model_type": "qwen3_moe", "mlp_only_layers": 5},
    {"d_model": 768, "n_layer": 24, "vocab_size": 50277, "ssm_cfg": "Mamba2"},
    {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
     "num_hidden_layers": 32, "intermediate_size": 11008, "vocab_size": 32000,
     "head_dim": float("inf")},
])
def test_hostile_configs_are_spec_errors_never_tracebacks(registry, cfg):
    with pytest.raises(SpecError):
        workload_from_hf(cfg, registry=registry)


def test_a_config_json_holding_a_list_is_refused(tmp_path, registry):
    (tmp_path / "config.json").write_text("[1, 2, 3]")
    with pytest.raises(SpecError, match="must hold a JSON object"):
        workload_from_hf(tmp_path, registry=registry)


def test_a_model_class_whose_head_the_template_does_not_cost_is_refused(registry):
    cfg = _with("llama-3.1-8b", architectures=["LlamaForSequenceClassification"])
    with pytest.raises(SpecError, match=r"LlamaForSequenceClassification.*:architectures"):
        workload_from_hf(cfg, registry=registry)
    assert roofkit.workload_from_hf(_config("llama-3.1-8b"), registry=registry).template == \
        "dense"  # LlamaForCausalLM is the head the template costs


def test_a_missing_config_json_path_is_a_spec_error_naming_it(tmp_path, registry):
    missing = tmp_path / "nowhere" / "config.json"
    with pytest.raises(SpecError, match="does not exist"):
        registry.workload(str(missing))


def test_an_unknown_workload_name_says_hugging_face_configs_work_too(registry):
    with pytest.raises(UnknownNameError, match=r"Hugging Face config\.json"):
        registry.workload("qwen2.5-14b-instruct")


def test_an_over_long_config_path_is_a_spec_error(registry):
    with pytest.raises(SpecError):
        workload_from_hf("x" * 5000 + "/config.json", registry=registry)


def test_an_exclusion_naming_weights_the_model_lacks_is_left_out_and_said(registry):
    cfg = _with("llama-3.1-8b", quantization_config={
        "quant_method": "gptq", "bits": 4, "group_size": 128,
        "modules_to_not_convert": ["model.layers.*.mlp.gate", "lm_head"]})
    w = workload_from_hf(cfg, registry=registry)
    assert w.formats == {"default": "gptq-int4-g128", "lm_head": "bf16"}
    assert "keeps router weights in bf16; llama has none" in w.notes
