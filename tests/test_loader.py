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


# -- every problem at once, each at its key path --------------------------------------------

def _keys(info, path):
    """{key path: message} of a SpecError about ``path``."""
    return {p.key: p.message for p in info.value.details if p.file == str(path)}


def test_raw_checks_run_beside_structuring_problems_each_at_its_key(tmp_path):
    text = (GOOD.replace('name = "toy"', 'name = "My Dev"')
            .replace('category = "edge"', 'category = "edgy"')
            .replace('bf16 = "100 TFLOP/s"', 'fp17 = "100 TFLOP/s"')
            .replace('compute = "sheet"', 'compute = "nowhere"'))
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load(path, Device)
    keys = _keys(info, path)
    assert "lowercase hyphenated key; write 'my-dev'" in keys["name"]  # not at <top>
    assert "did you mean 'edge'" in keys["category"]                   # a structuring problem
    assert "unknown compute slot 'fp17'" in keys["compute.fp17"]
    assert "has no peak" in keys["default_slot"]
    assert "'nowhere' names no key of [sources]" in keys["provenance.compute.fp17"]


def test_a_name_error_alone_is_reported_once_at_its_key(tmp_path):
    path = write(tmp_path, GOOD.replace('name = "toy"', 'name = "My Dev"'))
    with pytest.raises(SpecError) as info:
        load(path, Device)
    assert [(p.key, "my-dev" in p.message) for p in info.value.details] == [("name", True)]


def test_sparse_below_dense_and_usable_reason_are_checked_when_another_key_is_broken(tmp_path):
    text = GOOD.replace("[memory]", '[compute_sparse]\nbf16 = "50 TFLOP/s"\n[memory]\n'
                        'usable_fraction = 0.9\nbandwith = "1 TB/s"')
    text = text.replace('compute = "sheet"', 'compute = "sheet"\ncompute_sparse = "sheet"')
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load(path, Device)
    keys = _keys(info, path)
    assert "memory.bandwith" in keys
    assert "sparse figure below the dense" in keys["compute_sparse.bf16"]
    assert "needs its reason" in keys["memory.usable_reason"]


def test_provenance_is_demanded_only_for_numbers_the_file_sets(tmp_path):
    text = (GOOD.replace('overheads = "sheet"', '"overheads.dispatch" = "sheet"\n'
                         '"overheads.layer" = "sheet"')
            .replace('[memory]', '[memory]\nusable_fraction = 0.9\nusable_reason = "os"')
            .replace('[sources]', '[interconnect]\nbandwidth = "1 GB/s"\nmax_devices = 4\n'
                     '[sources]'))
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load(path, Device)
    keys = _keys(info, path)
    # launch keeps its default 0.0 and needs no source; the numbers the file writes do
    assert set(keys) == {"provenance.interconnect.bandwidth",
                         "provenance.interconnect.max_devices"}
    sourced = text.replace("[provenance]", '[provenance]\ninterconnect = "sheet"')
    assert load(write(tmp_path, sourced), Device).interconnect.max_devices == 4


WORKLOAD = """
name = "toy-net"
display_name = "Toy net"
domain = "vision"
[generic]
params = 1e6
flops_per_sample = "2 GFLOP"
layers = 4
[sources]
paper = "https://example.org/paper"
[provenance]
generic = "paper"
"""


def test_workload_raw_checks_run_beside_structuring_problems(tmp_path):
    from roofkit.schema.workload import Workload

    text = (WORKLOAD.replace('name = "toy-net"', 'name = "Toy Net"')
            .replace('"2 GFLOP"', '"2 GFLOPs"')
            .replace("params = 1e6", "params = -1.0")
            .replace('generic = "paper"', 'generic = "a friend"'))
    path = tmp_path / "workloads" / "toy.toml"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load(path, Workload)
    keys = _keys(info, path)
    assert "write 'toy-net'" in keys["name"]
    assert "write '2 GFLOP'" in keys["generic.flops_per_sample"]
    assert "params must be positive" in keys["generic.params"]
    assert "names no key of [sources]" in keys["provenance.generic.params"]
    # only the numbers the file sets need a source: `sample` is text, `published` absent
    assert not [k for k in keys if k.startswith("provenance.published")]


def test_a_file_that_is_not_utf8_names_the_file_and_line(tmp_path):
    from roofkit.loader import read_toml

    path = tmp_path / "bin.toml"
    path.write_bytes(b'name = "ok"\nnote = "\xff"\n')
    with pytest.raises(SpecError) as info:
        read_toml(path)
    (problem,) = info.value.details
    assert problem.file == str(path) and "not UTF-8" in problem.message
    assert "line 2" in problem.message


# -- errors pickle with every attribute ------------------------------------------------------

@pytest.mark.parametrize("exc", [
    SpecError(["a @ f:k", "b @ f:j"], title="two"),
    SpecError("one"),
    UnknownNameError("device", "h10", ["h100"], hint="Try `roofkit devices`."),
    PluginError("x"),
    OOMError("too big", 2.0, 1.0),
])
def test_every_error_round_trips_every_attribute(exc):
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc) and back.args == exc.args
    assert vars(back) == vars(exc)


def test_unknown_name_error_keeps_its_hint_through_pickle():
    exc = UnknownNameError("workload", "h100", [], hint="'h100' is a device.")
    back = pickle.loads(pickle.dumps(exc))
    assert back.hint == exc.hint and "'h100' is a device." in str(back)


def test_a_field_problem_pickles():
    from roofkit.schema.common import FieldProblem

    back = pickle.loads(pickle.dumps(FieldProblem("name", "bad")))
    assert (back.key, back.message) == ("name", "bad")


# -- FLOP spellings ----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "dimension", "fix"), [
    ("5 TFLOPs", "throughput", "5 TFLOP/s"),
    ("5 TFlops", "throughput", "5 TFLOP/s"),
    ("5 tflops", "throughput", "5 TFLOP/s"),
    ("5 Flops", "throughput", "5 FLOP/s"),
    ("5 FLOPs/s", "throughput", "5 FLOP/s"),
    ("5 GOPs", "throughput", "5 GOP/s"),
    ("5 Tops", "throughput", "5 TOP/s"),
    ("5 tflop/s", "throughput", "5 TFLOP/s"),
    ("8 GFLOPs", "compute", "8 GFLOP"),
    ("8 GFLOPS", "compute", "8 GFLOP"),
])
def test_every_flops_variant_gets_the_right_spelling(text, dimension, fix):
    from roofkit import units

    with pytest.raises(SpecError) as info:
        units.parse(text, dimension)
    assert f"write {fix!r}" in str(info.value)


def test_gigabits_stay_legal():
    from roofkit import units

    assert units.parse("200 Gb/s", "bandwidth") == 25e9
    assert units.parse("64 Gb", "bytes") == 8e9


def test_a_string_where_an_array_is_expected_is_refused_not_read_letter_by_letter(tmp_path):
    from roofkit.schema.engine import EngineSpec

    p = tmp_path / "engines" / "toy.toml"
    p.parent.mkdir(parents=True)
    p.write_text('name = "toy"\n[[kernels]]\nname = "k"\nop = "gemm"\ndevices = "h100-sxm"\n'
                 'source = "https://example.org/k"\n')
    with pytest.raises(SpecError) as info:
        load(p, EngineSpec)
    assert any("expected an array, got 'h100-sxm'" in x and x.endswith(f"{p}:kernels[0].devices")
               for x in info.value.problems)
