"""Quantised weight formats: their bytes per weight from the format definitions, their
16-bit activations, the CLI and the Hugging Face quantization_config mapping."""

import json

import pytest

import roofkit
from roofkit import Precision, SpecError
from roofkit.testing import run_cli


# ggml-common.h: sizeof(block) bytes per QK weights (its static_asserts)
@pytest.mark.parametrize(("name", "block_bytes", "weights"), [
    ("q4_0", 2 + 32 // 2, 32),
    ("q4_1", 2 * 2 + 32 // 2, 32),
    ("q5_0", 2 + 4 + 32 // 2, 32),
    ("q5_1", 2 * 2 + 4 + 32 // 2, 32),
    ("q8_0", 2 + 32, 32),
    ("q2_k", 2 * 2 + 256 // 16 + 256 // 4, 256),
    ("q3_k", 2 + 256 // 4 + 256 // 8 + 12, 256),
    ("q4_k", 2 * 2 + 12 + 256 // 2, 256),
    ("q5_k", 2 * 2 + 12 + 256 // 2 + 256 // 8, 256),
    ("q6_k", 2 + 256 // 16 + 3 * 256 // 4, 256),
])
def test_gguf_bits_equal_the_ggml_block_sizes(registry, name, block_bytes, weights):
    assert registry.precision(name).bits_per_element == pytest.approx(8 * block_bytes / weights)


@pytest.mark.parametrize(("name", "bits"), [
    ("awq-int4-g128", 4 + (16 + 4) / 128),   # fp16 scale + 4-bit zero per 128
    ("awq-int4-g64", 4 + (16 + 4) / 64),
    ("gptq-int4-g32", 4 + (16 + 4) / 32),
    ("gptq-int8-g128", 8 + (16 + 8) / 128),
    ("q4f16_1", 4 + 16 / 32),                # MLC: fp16 scale per 32, symmetric
    ("nf4", 4 + 32 / 64),                    # QLoRA: fp32 absmax per 64
    ("nf4-dq", 4 + 8 / 64 + 32 / (64 * 256)),  # QLoRA double quantisation: 0.127 bits
    ("bnb-int8", 8),
    ("q4_k_m", 4.84),                        # llama.cpp quantize README, Llama 2 7B
    ("q5_k_m", 5.68),
])
def test_group_formats_count_their_scales_and_zero_points(registry, name, bits):
    assert registry.precision(name).bits_per_element == pytest.approx(bits)


def test_aliases_name_the_common_defaults(registry):
    assert registry.precision("awq").name == "awq-int4-g128"
    assert registry.precision("GPTQ-INT4").name == "gptq-int4-g128"
    assert registry.precision("Q4_K_M").name == "q4_k_m"
    assert registry.precision("gguf-q8_0").name == "q8_0"
    assert registry.precision("bnb-nf4").name == "nf4"


def test_block_metadata_needs_a_block_size():
    with pytest.raises(ValueError, match="block_size"):
        Precision("bad", 4, "fp16", zero_bits=4)
    with pytest.raises(ValueError, match="super_block"):
        Precision("bad", 4, "fp16", super_bits=32)


def test_weight_only_formats_compute_beside_16_bit_activations(registry):
    est = roofkit.decode("llama-3.1-8b", "h100", batch=1, context=1024,
                         precision="awq-int4-g128", registry=registry)
    bf16 = roofkit.decode("llama-3.1-8b", "h100", batch=1, context=1024, precision="bf16",
                          registry=registry)
    row = next(r for r in est.rows if r.node == "ffn.gate_up")
    ref = next(r for r in bf16.rows if r.node == "ffn.gate_up")
    assert row.slot == "fp16" and est.settings["activations"] == "fp16"
    # a linear's weights are flops / 2 at batch 1; only their bytes change (16 -> 4.15625
    # bits), the 2-byte activations stay
    weights = float(ref.flops) / 2
    assert float(row.bytes) - weights * 4.15625 / 8 == pytest.approx(
        float(ref.bytes) - weights * 2, rel=1e-6)


def test_an_explicit_activation_format_still_wins(registry):
    est = roofkit.decode("llama-3.1-8b", "h100", batch=1, context=1024, precision="q8_0",
                         formats={"activations": "fp8"}, registry=registry)
    assert est.settings["activations"] == "fp8"


def test_serve_runs_a_weight_only_format_beside_its_activations(registry):
    est = roofkit.serve("llama-3.1-8b", "h100", batch=1, input_len=128, output_len=8,
                        precision="q4_k_m", registry=registry)
    assert est.slot == "fp16"
    assert est.precision == "q4_k_m"


def test_cli_takes_p_for_precision(capsys):
    code, out, _ = run_cli(capsys, "decode", "llama-3.1-8b", "h100", "--batch", "1",
                           "--context", "512", "-p", "nf4-dq", "--json")
    assert code == 0
    slots = {r["slot"] for r in json.loads(out)["rows"] if r["op"] == "linear"}
    assert slots == {"bf16"}


@pytest.mark.parametrize(("config", "name"), [
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, "awq-int4-g128"),
    ({"quantization_config": {"quant_method": "gptq", "bits": 8, "group_size": 32}},
     "gptq-int8-g32"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
      "bnb_4bit_use_double_quant": True}, "nf4-dq"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "fp4"},
     "bnb-fp4"),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "bnb-int8"),
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8"),
    ({"quant_method": "mxfp4"}, "mxfp4"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4"),
    ({"torch_dtype": "bfloat16"}, "bf16"),
])
def test_hf_quantization_configs_map_to_registered_precisions(registry, config, name):
    got = roofkit.precision_from_hf(config)
    assert got == name
    assert registry.precision(got).name == name


@pytest.mark.parametrize(("config", "key"), [
    ({"quant_method": "gptq", "bits": 4, "group_size": -1}, "quantization_config.group_size"),
    ({"quant_method": "awq", "bits": 3, "group_size": 128}, "quantization_config.bits"),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": False},
     "quantization_config.zero_point"),
    ({"quant_method": "eetq"}, "quantization_config.quant_method"),
    ({"quant_method": "bitsandbytes"}, "quantization_config"),
])
def test_unmapped_configs_are_refused_naming_the_key(config, key):
    with pytest.raises(SpecError, match=f"@ cfg.json:{key}"):
        roofkit.precision_from_hf(config, where="cfg.json")
