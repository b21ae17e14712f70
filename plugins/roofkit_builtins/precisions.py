"""Builtin numeric formats: element bits, block scales, compute slot and fallback chain.

Bits per element include the block scale: NVFP4 is E2M1 with an E4M3 scale per 16 elements,
4 + 8/16 = 4.5 bits; MXFP4 is E2M1 with an E8M0 scale per 32, 4 + 8/32 = 4.25 bits (OCP
Microscaling Formats v1.0; NVIDIA Blackwell NVFP4).
"""

from roofkit import Precision, hookimpl

_HALF = ("fp16", "bf16", "fp32")

PRECISIONS = (
    Precision("fp64", 64, "fp64", ("fp32",), description="IEEE binary64"),
    Precision("fp32", 32, "fp32", (), aliases=("float32", "f32"), description="IEEE binary32"),
    Precision("tf32", 32, "tf32", ("fp32",), description="stored as fp32; tensor cores use a "
              "10-bit mantissa"),
    Precision("bf16", 16, "bf16", ("fp16", "fp32"), aliases=("bfloat16",),
              description="bfloat16: 8-bit exponent, 7-bit mantissa"),
    Precision("fp16", 16, "fp16", ("bf16", "fp32"), aliases=("float16", "f16", "half"),
              description="IEEE binary16"),
    Precision("fp8", 8, "fp8", _HALF, aliases=("fp8-e4m3", "fp8_e4m3", "e4m3", "float8_e4m3fn"),
              description="FP8 E4M3 (OCP OFP8)"),
    Precision("fp8-e5m2", 8, "fp8", _HALF, aliases=("fp8_e5m2", "e5m2", "float8_e5m2"),
              description="FP8 E5M2 (OCP OFP8)"),
    Precision("mxfp8", 8, "fp8", _HALF, scale_bits=8, block_size=32,
              description="MXFP8: FP8 elements with an E8M0 scale per 32 (OCP MX v1.0)"),
    Precision("mxfp6", 6, "fp6", ("fp8", *_HALF), scale_bits=8, block_size=32,
              description="MXFP6: FP6 elements with an E8M0 scale per 32 (OCP MX v1.0)"),
    Precision("nvfp4", 4, "fp4", ("fp8", *_HALF), scale_bits=8, block_size=16,
              description="NVFP4: E2M1 elements with an E4M3 scale per 16 (4.5 bits)"),
    Precision("mxfp4", 4, "fp4", ("fp8", *_HALF), scale_bits=8, block_size=32,
              description="MXFP4: E2M1 elements with an E8M0 scale per 32 (4.25 bits)"),
    Precision("int8", 8, "int8", _HALF, kind="int", description="8-bit integer"),
    Precision("int4", 4, "int4", ("int8", *_HALF), kind="int", description="4-bit integer"),
)


@hookimpl
def roofkit_register_precisions():
    return PRECISIONS
