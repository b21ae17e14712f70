import pytest

from roofkit import UnknownNameError


@pytest.mark.parametrize(("name", "bits"), [
    ("fp32", 32), ("tf32", 32), ("bf16", 16), ("fp16", 16), ("fp8", 8), ("fp8-e5m2", 8),
    ("int8", 8), ("int4", 4),
    ("nvfp4", 4 + 8 / 16),   # E2M1 + E4M3 scale per 16 elements
    ("mxfp4", 4 + 8 / 32),   # E2M1 + E8M0 scale per 32 elements
    ("mxfp8", 8 + 8 / 32),   # E4M3 + E8M0 scale per 32 elements
])
def test_bits_per_element_include_the_block_scale(registry, name, bits):
    p = registry.precision(name)
    assert p.bits_per_element == pytest.approx(bits)
    assert p.bytes_per_element == pytest.approx(bits / 8)


def test_names_are_case_insensitive_and_aliases_resolve(registry):
    assert registry.precision("NVFP4") is registry.precision("nvfp4")
    assert registry.precision("E4M3").name == "fp8"
    assert registry.precision("e5m2").name == "fp8-e5m2"
    assert registry.precision("BFloat16").name == "bf16"


def test_slots_and_fallback_chains(registry):
    assert registry.precision("nvfp4").slots() == ("fp4", "fp8", "fp16", "bf16", "fp32")
    assert registry.precision("mxfp4").slot == "fp4"
    assert registry.precision("tf32").slots() == ("tf32", "fp32")
    assert registry.precision("int4").slots()[:2] == ("int4", "int8")


def test_unknown_precision_lists_known(registry):
    with pytest.raises(UnknownNameError, match="Did you mean 'fp8'"):
        registry.precision("fp9")
