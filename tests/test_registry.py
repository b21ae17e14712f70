import types

import pytest

import roofkit
from roofkit import PluginError, Precision, SpecError, UnknownNameError, hookimpl
from roofkit.testing import make_registry, write_spec

TOY = """
name = "{name}"
display_name = "{display}"
category = "edge"
aliases = ["{alias}"]
default_slot = "bf16"
[compute]
bf16 = "{peak}"
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


def toy(tmp_path, name="toy-1", display="Toy", alias="toy", peak="100 TFLOP/s", overrides=None):
    head = f'overrides = "{overrides}"\n' if overrides else ""
    return write_spec(tmp_path, "devices", name,
                      head + TOY.format(name=name, display=display, alias=alias, peak=peak))


def test_lookup_by_key_alias_and_any_case(registry):
    assert registry.device("H100").name == "h100-sxm"
    assert registry.device("h100-SXM").name == "h100-sxm"
    assert registry.device(registry.device("h100")) is registry.device("h100")


def test_unknown_device_suggests_close_names(registry):
    with pytest.raises(UnknownNameError, match=r"Did you mean 'h100'"):
        registry.device("h10")


def test_a_user_spec_dir_adds_a_device_and_origin_names_its_file(tmp_path):
    path = toy(tmp_path)
    reg = make_registry(spec_paths=[tmp_path])
    assert reg.device("toy").display_name == "Toy"
    assert reg.origin("toy-1") == path.resolve()


def test_a_later_layer_replaces_a_name_where_its_file_says_so(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    toy(a, display="from user path")
    env = toy(b, display="from env", overrides="toy-1")
    monkeypatch.setenv("ROOFKIT_SPEC_PATH", str(b))
    reg = make_registry(spec_paths=[a])
    assert reg.device("toy-1").display_name == "from env"
    assert reg.origin("toy-1") == env.resolve()


def test_two_user_files_with_one_name_in_two_layers_are_refused(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    first = toy(a, display="from user path")
    env = toy(b, display="from env")
    monkeypatch.setenv("ROOFKIT_SPEC_PATH", str(b))
    with pytest.raises(SpecError) as info:
        make_registry(spec_paths=[a])
    text = str(info.value)
    assert str(first.resolve()) in text and str(env.resolve()) in text
    assert 'overrides = "toy-1"' in text


def test_a_user_device_overrides_a_builtin_by_name(tmp_path, registry):
    path = toy(tmp_path, name="h100-sxm", display="My H100", alias="myh100",
               overrides="h100-sxm")
    reg = make_registry(spec_paths=[tmp_path])
    assert reg.device("h100-sxm").display_name == "My H100"
    assert reg.origin("h100-sxm") == path.resolve()
    assert registry.device("h100-sxm").display_name != "My H100"


def test_a_user_device_named_like_a_builtin_without_overrides_is_refused(tmp_path):
    path = toy(tmp_path, name="h100-sxm", display="My H100", alias="myh100")
    with pytest.raises(SpecError, match=r"takes 'h100-sxm' from the shipped 'h100-sxm'") as info:
        make_registry(spec_paths=[tmp_path])
    assert f"{path.resolve()}:name" in str(info.value)


def test_a_bad_user_file_fails_the_build_naming_file_and_key(tmp_path):
    path = toy(tmp_path, peak="100 TFLOPS")
    with pytest.raises(SpecError) as info:
        make_registry(spec_paths=[tmp_path])
    assert f"{path.resolve()}:compute.bf16" in str(info.value)


def test_two_files_with_one_name_in_one_layer_are_refused(tmp_path):
    toy(tmp_path, name="toy-1")
    p2 = write_spec(tmp_path, "devices", "other",
                    TOY.format(name="toy-1", display="x", alias="y", peak="1 TFLOP/s"))
    with pytest.raises(SpecError, match="defined twice"):
        make_registry(spec_paths=[tmp_path])
    assert p2.exists()


def test_registry_tables_are_immutable(registry):
    with pytest.raises(TypeError):
        registry.precisions["new"] = None
    with pytest.raises(TypeError):
        registry.devices._entries["x"] = None


def _plugin(name, *precisions):
    mod = types.ModuleType(name)

    @hookimpl
    def roofkit_register_precisions():
        return list(precisions)

    mod.roofkit_register_precisions = roofkit_register_precisions
    return mod


def test_a_plugin_adds_a_precision():
    reg = make_registry(_plugin("fp6plug", Precision("fp6-e3m2", 6, "fp6", ("fp8", "bf16"))))
    assert reg.precision("FP6-E3M2").bytes_per_element == 0.75
    assert reg.provider("precisions", "fp6-e3m2") == "fp6plug"


def test_duplicate_names_name_both_plugins():
    with pytest.raises(PluginError) as info:
        make_registry(_plugin("dupe", Precision("bf16", 16, "bf16")))
    assert "roofkit_builtins.precisions" in str(info.value) and "'dupe'" in str(info.value)


def test_a_misspelled_hook_is_caught():
    mod = types.ModuleType("typo")

    @hookimpl
    def roofkit_register_precision():
        return []

    mod.roofkit_register_precision = roofkit_register_precision
    with pytest.raises(PluginError, match="unknown hook"):
        make_registry(mod)


def test_a_hook_returning_the_wrong_type_is_refused():
    mod = types.ModuleType("wrong")

    @hookimpl
    def roofkit_register_precisions():
        return ["bf16"]

    mod.roofkit_register_precisions = roofkit_register_precisions
    with pytest.raises(PluginError, match=r"expected roofkit\.types\.Precision"):
        make_registry(mod)


def test_blocked_plugins_are_skipped():
    reg = make_registry(_plugin("blockme", Precision("fp5", 5, "fp6")), blocked=["blockme"])
    with pytest.raises(UnknownNameError):
        reg.precision("fp5")


def test_default_registry_is_cached_and_lazy():
    assert roofkit.default_registry() is roofkit.default_registry()


def test_registry_lists_builtin_plugins(registry):
    names = {p.name for p in registry.plugins}
    assert "roofkit_builtins.precisions" in names
    info = next(p for p in registry.plugins if p.name == "roofkit_builtins.precisions")
    assert info.distribution == "roofkit" and "roofkit_register_precisions" in info.hooks


# -- aliases layer like names ----------------------------------------------------------------

def test_a_later_layers_alias_wins_where_its_file_overrides(tmp_path, registry):
    path = toy(tmp_path, name="my-h100", alias="h100", overrides="h100-sxm")
    reg = make_registry(spec_paths=[tmp_path])
    assert reg.device("h100").name == "my-h100"
    assert reg.device("H100").name == "my-h100"
    assert reg.origin("h100") == path.resolve()
    assert reg.device("h100-sxm").name == "my-h100"  # replaced: its names follow
    assert reg.device("h100-sxm5").name == "my-h100"
    assert registry.device("h100").name == "h100-sxm"


def test_two_specs_of_one_layer_claiming_one_alias_name_both_files(tmp_path):
    a = toy(tmp_path, name="toy-1", alias="shared")
    b = toy(tmp_path, name="toy-2", alias="Shared")
    with pytest.raises(SpecError) as info:
        make_registry(spec_paths=[tmp_path])
    text = str(info.value)
    assert "alias 'shared'" in text and str(a.resolve()) in text and str(b.resolve()) in text


def test_an_alias_of_one_layer_yields_to_a_later_layer_that_overrides(tmp_path):
    toy(tmp_path / "a", name="toy-1", alias="shared")
    later = toy(tmp_path / "b", name="toy-2", alias="shared", overrides="toy-1")
    reg = make_registry(spec_paths=[tmp_path / "a", tmp_path / "b"])
    assert reg.device("shared").name == "toy-2" and reg.origin("shared") == later.resolve()
    assert reg.device("toy-1").name == "toy-2"


def test_an_alias_cannot_hide_an_earlier_name(tmp_path):
    path = toy(tmp_path, name="toy-1", alias="a100-40gb")
    with pytest.raises(SpecError, match=r"takes 'a100-40gb' from the shipped 'a100-40gb'") \
            as info:
        make_registry(spec_paths=[tmp_path])
    assert f"{path.resolve()}:aliases" in str(info.value)


# -- a name of another kind says so ---------------------------------------------------------

def test_a_device_where_a_workload_belongs_says_so_and_gives_the_order(registry):
    with pytest.raises(UnknownNameError) as info:
        registry.workload("h100")
    assert "'h100' is a device (h100-sxm), not a workload" in str(info.value)
    assert "WORKLOAD DEVICE" in str(info.value)


def test_a_workload_where_a_device_belongs_says_so(registry):
    with pytest.raises(UnknownNameError, match=r"'llama-3\.1-8b' is a workload, not a device"):
        registry.device("llama-3.1-8b")


def test_an_unknown_name_of_no_kind_still_suggests(registry):
    with pytest.raises(UnknownNameError) as info:
        registry.workload("llama-3.1-8")
    assert "Did you mean" in str(info.value) and "is a device" not in str(info.value)


def test_a_device_file_where_a_workload_belongs_says_what_it_is(registry):
    from roofkit.paths import builtin_specs_dir

    path = builtin_specs_dir() / "devices" / "h100-sxm.toml"
    with pytest.raises(SpecError) as info:
        registry.workload(str(path))
    (problem,) = info.value.details
    assert "this file is a device spec, not a workload spec" in problem.message


def test_a_loose_device_file_where_a_workload_belongs_says_what_it_is(tmp_path, registry):
    path = tmp_path / "mine.toml"
    path.write_text(TOY.format(name="toy-1", display="Toy", alias="t", peak="1 TFLOP/s"))
    with pytest.raises(SpecError, match="this file is a device spec"):
        registry.workload(path)
    assert registry.device(path).name == "toy-1"
