import pickle

import pytest

from roofkit import OOMError, PluginError, SpecError, UnknownNameError
from roofkit.loader import load
from roofkit.schema.device import Device

GOOD = """
name = "toy"
display_name = "Toy accelerator"
category = "edge"
default_slot = "bf16"
[compute]
bf16 = "100 TFLOP/s"
[memory]
capacity = "16 GB"
bandwidth = "1 TB/s"
[overheads]
dispatch = "10 us"
layer = "1 us"
[sources]
sheet = "https://example.org/toy"
[provenance]
compute = "sheet"
memory = "sheet"
overheads = "sheet"
"""


def write(tmp_path, text):
    p = tmp_path / "devices" / "toy.toml"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_a_good_device_loads_into_si_floats(tmp_path):
    d = load(write(tmp_path, GOOD), Device)
    assert d.compute == {"bf16": 100e12}
    assert d.memory.capacity == 16e9 and d.memory.bandwidth == 1e12
    assert d.overheads.dispatch == 1e-5


def test_every_problem_is_reported_at_once_with_file_and_key(tmp_path):
    bad = (GOOD.replace('bf16 = "100 TFLOP/s"', 'bf16 = "100 TFLOPS"')
           .replace('capacity = "16 GB"', 'capacity = "-16 GB"')
           .replace('bandwidth = "1 TB/s"', 'bandwith = "1 TB/s"'))
    path = write(tmp_path, bad)
    with pytest.raises(SpecError) as info:
        load(path, Device)
    lines = info.value.problems
    assert any("write '100 TFLOP/s'" in x and x.endswith(f"{path}:compute.bf16") for x in lines)
    assert any("must be positive" in x and x.endswith(f"{path}:memory.capacity") for x in lines)
    assert any("did you mean 'bandwidth'" in x and x.endswith(f"{path}:memory.bandwith")
               for x in lines)
    assert "Traceback" not in str(info.value) and "cattrs" not in str(info.value)


@pytest.mark.parametrize(("old", "new", "fragment"), [
    ('category = "edge"', 'category = "edgy"', "must be one of"),
    ('name = "toy"', "name = 5", "expected a string"),
    ('[memory]', '[memory]\nusable_fraction = "0.9"', "write 0.9 without quotes"),
    ('[memory]', '[memory]\nusable_fraction = 1.5', "must be in"),
    ('layer = "1 us"', "layer = 1", "write e.g. '10 us'"),
])
def test_strict_types(tmp_path, old, new, fragment):
    with pytest.raises(SpecError, match=fragment):
        load(write(tmp_path, GOOD.replace(old, new)), Device)


def test_numbers_need_provenance(tmp_path):
    text = GOOD.replace('overheads = "sheet"', "")
    with pytest.raises(SpecError, match=r"no source for overheads.dispatch.*provenance"):
        load(write(tmp_path, text), Device)


def test_provenance_must_name_a_source_or_a_derivation(tmp_path):
    text = GOOD.replace('compute = "sheet"', 'compute = "a friend told me"')
    with pytest.raises(SpecError, match="names no key of"):
        load(write(tmp_path, text), Device)


def test_sparse_below_dense_is_flagged(tmp_path):
    text = GOOD.replace("[memory]", '[compute_sparse]\nbf16 = "50 TFLOP/s"\n[memory]')
    text = text.replace('compute = "sheet"', 'compute = "sheet"\ncompute_sparse = "sheet"')
    with pytest.raises(SpecError, match="sparse figure below the dense"):
        load(write(tmp_path, text), Device)


def test_toml_syntax_error_names_the_file(tmp_path):
    path = write(tmp_path, "name = ")
    with pytest.raises(SpecError, match=str(path)):
        load(path, Device)


def test_errors_are_builtins_and_picklable():
    assert issubclass(SpecError, ValueError)
    assert issubclass(UnknownNameError, LookupError)
    assert issubclass(OOMError, MemoryError)
    for exc in (SpecError(["a @ f:k", "b @ f:j"]), UnknownNameError("device", "h10", ["h100"]),
                PluginError("x"), OOMError("too big", 2.0, 1.0)):
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc)


def test_unknown_name_suggests():
    exc = UnknownNameError("device", "h10", ["h100", "h200", "a100"])
    assert "Did you mean 'h100'" in str(exc)
