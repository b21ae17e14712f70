"""Builtin quantised weight formats with their real bytes: group scales, zero points and
super-block scales counted per weight.

bits per weight = bits + (scale_bits + zero_bits) / block_size + super_bits / super_block.

* AWQ and GPTQ (AutoAWQ GEMM and AutoGPTQ/exllama layouts): per group of g weights along the
  input dimension, an fp16 scale and a ``bits``-wide packed zero point, so int4 g128 is
  4 + (16 + 4)/128 = 4.156 bits. GPTQ's ``g_idx`` (one int32 per input row, shared by all
  output columns, 32/N bits a weight) is left out: under 0.01 bits for N >= 4096.
* GGUF (ggml ``ggml-common.h`` block structs): q4_0 is an fp16 scale and 32 nibbles,
  18 B / 32 = 4.5 bits; q8_0 34 B / 32 = 8.5; q4_K 144 B / 256 = 4.5; q5_K 176 B / 256 = 5.5;
  q6_K 210 B / 256 = 6.5625. The file types q4_K_M and q5_K_M mix q4_K/q5_K with q6_K
  (attn_v, ffn_down in about half the layers, the output matrix): their bits are the
  measured bits per weight of Llama 2 7B files (llama.cpp examples/quantize README).
* MLC q4f16_1: int4 with an fp16 scale per 32 weights, symmetric (no zero point).
* bitsandbytes NF4/FP4: an fp32 absmax per 64 weights, 4 + 32/64 = 4.5 bits; with double
  quantisation the absmax is 8-bit with an fp32 scale per 256 blocks,
  4 + 8/64 + 32/(64*256) = 4.127 (QLoRA, Dettmers et al. 2023, section 3). LLM.int8():
  int8 weights with an fp32 scale per output row (32/K bits, left out), int8 activations.

Weight-only formats compute beside 16-bit activations (``activations``): the kernels widen
the weights before the multiply, so their ``slot`` is the 16-bit one. Which kernels an engine
runs for them, and at what efficiency, is a property of the engine, not of the format.
"""

from roofkit import Precision, hookimpl

_F16 = ("bf16", "fp32")

AWQ = "https://github.com/casper-hansen/AutoAWQ/blob/main/awq/modules/linear/gemm.py"
GPTQ = "https://github.com/AutoGPTQ/AutoGPTQ/blob/main/auto_gptq/nn_modules/qlinear/qlinear_cuda.py"
GGML = "https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml-common.h"
GGUF_MIX = ("https://github.com/ggml-org/llama.cpp/blob/b8c1476e44cc1f3a1811613f65251cf779067636/"
            "examples/quantize/README.md")
MLC = "https://github.com/mlc-ai/mlc-llm/blob/main/python/mlc_llm/quantization/quantization.py"
QLORA = "https://arxiv.org/abs/2305.14314"
INT8 = "https://arxiv.org/abs/2208.07339"

GROUP_SIZES = (32, 64, 128)


def _group(method: str, bits: int, group: int, source: str) -> Precision:
    aliases = (f"{method}-int{bits}", f"{method}") if group == 128 and bits == 4 else ()
    if group == 128 and bits == 8:
        aliases = (f"{method}-int8",)
    return Precision(
        f"{method}-int{bits}-g{group}", bits, "fp16", _F16, aliases=aliases, kind="int",
        scale_bits=16, zero_bits=bits, block_size=group, activations="fp16", source=source,
        description=f"{method.upper()} int{bits}: an fp16 scale and a {bits}-bit zero point "
                    f"per {group} weights, fp16 activations")


def _gguf(name: str, bits: int, block: int, scale_bits: int, zero_bits: int = 0,
          super_bits: int = 0, what: str = "") -> Precision:
    return Precision(
        name, bits, "fp16", _F16, aliases=(f"gguf-{name}",), kind="int",
        scale_bits=scale_bits, zero_bits=zero_bits, block_size=block,
        super_block=256 if super_bits else 0, super_bits=super_bits, activations="fp16",
        source=GGML, description=f"GGUF {name}: {what}")


PRECISIONS = (
    *(_group("awq", 4, g, AWQ) for g in GROUP_SIZES),
    *(_group("gptq", b, g, GPTQ) for b in (4, 8) for g in GROUP_SIZES),
    _gguf("q4_0", 4, 32, 16, what="an fp16 scale per 32 weights (18 B per 32)"),
    _gguf("q4_1", 4, 32, 16, 16, what="an fp16 scale and min per 32 weights (20 B per 32)"),
    _gguf("q5_0", 5, 32, 16, what="an fp16 scale per 32 weights (22 B per 32)"),
    _gguf("q5_1", 5, 32, 16, 16, what="an fp16 scale and min per 32 weights (24 B per 32)"),
    _gguf("q8_0", 8, 32, 16, what="an fp16 scale per 32 weights (34 B per 32)"),
    _gguf("q2_k", 2, 16, 4, 4, 32, what="4-bit scale and min per 16, fp16 d and dmin per 256 "
          "(84 B per 256)"),
    _gguf("q3_k", 3, 16, 6, 0, 16, what="6-bit scale per 16, fp16 d per 256 (110 B per 256)"),
    _gguf("q4_k", 4, 32, 6, 6, 32, what="6-bit scale and min per 32, fp16 d and dmin per 256 "
          "(144 B per 256)"),
    _gguf("q5_k", 5, 32, 6, 6, 32, what="6-bit scale and min per 32, fp16 d and dmin per 256 "
          "(176 B per 256)"),
    _gguf("q6_k", 6, 16, 8, 0, 16, what="int8 scale per 16, fp16 d per 256 (210 B per 256)"),
    Precision("q4_k_m", 4.84, "fp16", _F16, aliases=("gguf-q4_k_m",), kind="int",
              activations="fp16", source=GGUF_MIX,
              description="GGUF Q4_K_M file: q4_K with q6_K for attn_v, ffn_down in about half "
                          "the layers and the output; 4.84 bits per weight measured on Llama 2 "
                          "7B (4.80 on 70B)"),
    Precision("q4_k_s", 4.58, "fp16", _F16, aliases=("gguf-q4_k_s",), kind="int",
              activations="fp16", source=GGUF_MIX,
              description="GGUF Q4_K_S file: mostly q4_K; 4.58 bits per weight on Llama 2 7B"),
    Precision("q5_k_m", 5.68, "fp16", _F16, aliases=("gguf-q5_k_m",), kind="int",
              activations="fp16", source=GGUF_MIX,
              description="GGUF Q5_K_M file: q5_K with q6_K for attn_v, ffn_down in about half "
                          "the layers and the output; 5.68 bits per weight on Llama 2 7B"),
    Precision("q5_k_s", 5.52, "fp16", _F16, aliases=("gguf-q5_k_s",), kind="int",
              activations="fp16", source=GGUF_MIX,
              description="GGUF Q5_K_S file: mostly q5_K; 5.52 bits per weight on Llama 2 7B"),
    Precision("q4f16_1", 4, "fp16", _F16, aliases=("mlc-q4f16_1",), kind="int",
              scale_bits=16, block_size=32, activations="fp16", source=MLC,
              description="MLC q4f16_1: int4 with an fp16 scale per 32 weights, symmetric"),
    Precision("nf4", 4, "bf16", ("fp16", "fp32"), aliases=("bnb-nf4",), scale_bits=32,
              block_size=64, activations="bf16", source=QLORA,
              description="bitsandbytes NF4: an fp32 absmax per 64 weights"),
    Precision("nf4-dq", 4, "bf16", ("fp16", "fp32"), aliases=("bnb-nf4-dq", "qlora-nf4"),
              scale_bits=8, block_size=64, super_block=64 * 256, super_bits=32,
              activations="bf16", source=QLORA,
              description="bitsandbytes NF4 with double quantisation: an 8-bit absmax per 64 "
                          "weights, an fp32 scale per 256 blocks (4.127 bits)"),
    Precision("bnb-fp4", 4, "bf16", ("fp16", "fp32"), scale_bits=32, block_size=64,
              activations="bf16", source=QLORA,
              description="bitsandbytes FP4: an fp32 absmax per 64 weights"),
    Precision("bnb-fp4-dq", 4, "bf16", ("fp16", "fp32"), scale_bits=8, block_size=64,
              super_block=64 * 256, super_bits=32, activations="bf16", source=QLORA,
              description="bitsandbytes FP4 with double quantisation (4.127 bits)"),
    Precision("bnb-int8", 8, "int8", ("fp16", "bf16", "fp32"), aliases=("llm-int8",),
              kind="int", activations="int8", source=INT8,
              description="bitsandbytes LLM.int8(): int8 weights and vector-wise int8 "
                          "activations, outlier columns in fp16"),
)


@hookimpl
def roofkit_register_precisions():
    return PRECISIONS
