"""A spec that takes a name or an alias another layer already answers to is an error naming
both files, unless its file says ``overrides = "<name>"``; ``check`` reports every conflict
loading would refuse."""

from __future__ import annotations

import pytest
from deadline import deadline

import roofkit
from roofkit.errors import SpecError
from roofkit.testing import write_spec

MI210 = """
{head}name = "{name}"
display_name = "AMD Instinct MI210 (a user's file)"
category = "cloud"
aliases = [{aliases}]
default_slot = "bf16"
[compute]
bf16 = "181 TFLOP/s"
[memory]
capacity = "64 GB"
bandwidth = "1.6 TB/s"
[overheads]
dispatch = "10 us"
layer = "1 us"
[sources]
sheet = "https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html"
[provenance]
compute = "sheet"
memory = "sheet"
overheads = "sheet"
"""


def device(root, name="mi210", aliases=("mi-210",), overrides=None, file=None):
    head = "" if overrides is None else f"overrides = {overrides}\n"
    text = MI210.format(head=head, name=name, aliases=", ".join(f'"{a}"' for a in aliases))
    return write_spec(root, "devices", file or name, text)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ROOFKIT_SPEC_PATH", raising=False)


def _refused(*paths):
    with deadline(60), pytest.raises(SpecError) as info:
        roofkit.build_registry(entry_points=False, spec_paths=list(paths))
    return str(info.value)


def test_an_alias_taking_a_shipped_alias_is_refused_naming_both_files(tmp_path):
    path = device(tmp_path / "user", aliases=("h100",))
    text = _refused(tmp_path / "user")
    assert "takes 'h100' from the shipped 'h100-sxm'" in text
    assert f"{path.resolve()}:aliases" in text and "specs/devices/h100-sxm.toml" in text
    assert 'overrides = "h100-sxm"' in text


def test_a_user_file_named_like_a_shipped_one_is_refused(tmp_path):
    path = device(tmp_path / "user", name="h100-sxm", aliases=())
    text = _refused(tmp_path / "user")
    assert f"{path.resolve()}:name" in text and "the shipped 'h100-sxm'" in text


def test_two_user_files_with_one_name_are_refused_naming_both(tmp_path, monkeypatch):
    a = device(tmp_path / "a")
    b = device(tmp_path / "b")
    monkeypatch.setenv("ROOFKIT_SPEC_PATH", str(tmp_path / "b"))
    text = _refused(tmp_path / "a")
    assert str(a.resolve()) in text and str(b.resolve()) in text


def test_two_files_with_one_name_in_one_folder_are_refused(tmp_path):
    device(tmp_path / "user", file="one")
    device(tmp_path / "user", file="two")
    assert "defined twice in one layer" in _refused(tmp_path / "user")


def test_an_explicit_override_takes_the_shipped_names(tmp_path, registry):
    device(tmp_path / "user", aliases=("h100",), overrides='"h100-sxm"')
    with deadline(60):
        reg = roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "user"])
        mine = roofkit.Engine.solve("llama-3.1-8b", "h100", registry=reg)
        shipped = roofkit.Engine.solve("llama-3.1-8b", "h100", registry=registry)
    assert reg.device("h100").name == "mi210"
    assert reg.device("h100-sxm").name == "mi210"  # the shipped spec's names follow it
    assert reg.device("h100").memory.bandwidth == 1.6e12
    # decode of an 8B model is memory bound: 1.6 TB/s is slower than the H100's 3.35 TB/s
    assert mine.to_dict()["latency_ms"] > shipped.to_dict()["latency_ms"]


@pytest.mark.parametrize("value,words", [
    ('"h100-sx"', "did you mean 'h100-sxm'"),
    ('"nothing-like-it"', "no earlier layer has a device 'nothing-like-it'"),
    ("3", "expected the name of the spec this file replaces"),
    ("[]", "expected the name of the spec this file replaces"),
])
def test_a_bad_overrides_key_is_refused(tmp_path, value, words):
    path = device(tmp_path / "user", overrides=value)
    text = _refused(tmp_path / "user")
    assert words in text and f"{path.resolve()}:overrides" in text
