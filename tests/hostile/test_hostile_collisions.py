"""A spec that takes a name or an alias another layer already answers to is an error naming
both files, unless its file says ``overrides = "<name>"``; ``check`` reports every conflict
loading would refuse."""

from __future__ import annotations

import pytest
from deadline import deadline

import roofkit
from roofkit.errors import SpecError
from roofkit.testing import run_cli, write_spec

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


# -- check sees what loading would refuse, in the catalogue the files would join ------------

WORKLOAD = """
name = "{name}"
display_name = "{name}"
domain = "language"
template = "{template}"
[dims]
layers = 2
hidden = 64
heads = 4
kv_heads = 4
head_dim = 16
ffn = 128
{vocab}
[sources]
config = "https://example.org/tiny"
[provenance]
dims = "config"
"""


def workload(root, name, template="dense", vocab=True):
    text = WORKLOAD.format(name=name, template=template, vocab="vocab = 100" if vocab else "")
    return write_spec(root, "workloads", name, text)


def own_circuit(root, name="my-dense"):
    from roofkit.paths import builtin_specs_dir

    text = (builtin_specs_dir() / "circuits" / "dense.toml").read_text()
    return write_spec(root, "circuits", name, text.replace('name = "dense"', f'name = "{name}"'))


def check(capsys, *paths):
    with deadline(60):
        code, out, _ = run_cli(capsys, "check", "--json", *map(str, paths), plugins=False)
    import json

    doc = json.loads(out)
    return code, doc["problems"]


@pytest.mark.parametrize("on_spec_path", [False, True])
def test_one_broken_workload_hides_no_other_and_the_folders_own_circuits_count(
        tmp_path, monkeypatch, capsys, on_spec_path):
    user = tmp_path / "user"
    own_circuit(user)
    broken = workload(user, "broken", vocab=False)  # the dense template requires vocab
    workload(user, "fine", template="dense")
    workload(user, "mine", template="my-dense")  # the folder's own template
    if on_spec_path:  # the README's flow: check, then put the folder on ROOFKIT_SPEC_PATH
        monkeypatch.setenv("ROOFKIT_SPEC_PATH", str(user))
    code, problems = check(capsys, user)
    assert code == 1
    assert [p["file"] for p in problems] == [str(broken.resolve())]
    assert "vocab" in problems[0]["message"]
    assert not any("unknown circuit template" in p["message"] for p in problems)


def test_check_reports_an_alias_taken_from_a_shipped_device(tmp_path, capsys):
    path = device(tmp_path / "user", aliases=("h100",))
    code, problems = check(capsys, tmp_path / "user")
    assert code == 1
    (p,) = problems
    assert p["file"] == str(path.resolve()) and p["key"] == "aliases"
    assert "takes 'h100' from the shipped 'h100-sxm'" in p["message"]


def test_check_reports_two_files_with_one_name_in_one_folder(tmp_path, capsys):
    device(tmp_path / "user", file="one")
    device(tmp_path / "user", file="two")
    code, problems = check(capsys, tmp_path / "user")
    assert code == 1 and any("defined twice" in p["message"] for p in problems)


def test_check_reports_a_name_another_spec_path_already_defines(tmp_path, monkeypatch, capsys):
    device(tmp_path / "other")
    mine = device(tmp_path / "user")
    monkeypatch.setenv("ROOFKIT_SPEC_PATH", str(tmp_path / "other"))
    code, problems = check(capsys, tmp_path / "user")
    assert code == 1
    assert {p["file"] for p in problems} == {str(mine.resolve())}  # its name and its alias
    assert any("takes 'mi210'" in p["message"] for p in problems)


def test_check_of_a_shipped_file_is_no_conflict_with_itself(capsys):
    from roofkit.paths import builtin_specs_dir

    code, problems = check(capsys, builtin_specs_dir() / "devices" / "h100-sxm.toml")
    assert (code, problems) == (0, [])


def test_check_of_an_override_passes(tmp_path, capsys):
    device(tmp_path / "user", aliases=("h100",), overrides='"h100-sxm"')
    assert check(capsys, tmp_path / "user") == (0, [])


# -- a template workload's derived parameter count against its published one ---------------

# tiny dense (tie_embeddings 0, gated FFN, RMSNorm), by hand:
#   embed 100*64 = 6400; per layer qkv 64*(64 + 2*64) = 12288, o 64*64 = 4096,
#   ffn 3*64*128 = 24576, two norms 2*64 = 128 -> 41088; two layers 82176;
#   final norm 64; head 100*64 = 6400. Total 95040.
TINY_PARAMS = 6400 + 2 * (12288 + 4096 + 24576 + 128) + 64 + 6400


def published(root, params):
    text = WORKLOAD.format(name="tiny-p", template="dense", vocab="vocab = 100")
    text = text.replace('[provenance]\ndims = "config"',
                        f'[published]\nparams = {params}\n[provenance]\ndims = "config"\n'
                        '"published.params" = "config"')
    return write_spec(root, "workloads", "tiny-p", text)


def test_params_far_from_the_published_count_are_refused_naming_both(tmp_path, capsys):
    assert TINY_PARAMS == 95040
    path = published(tmp_path / "user", 85000)  # 95040 / 85000 - 1 = +11.8 %
    code, problems = check(capsys, tmp_path / "user")
    assert code == 1
    (p,) = problems
    assert p["file"] == str(path.resolve()) and p["key"] == "published.params"
    assert "9.504e-05B" in p["message"] and "8.5e-05B" in p["message"]
    assert "+11.8%" in p["message"]
    text = _refused(tmp_path / "user")
    assert "published.params" in text


def test_params_a_little_off_the_published_count_warn_in_check(tmp_path, capsys):
    import json

    published(tmp_path / "user", 92000)  # +3.3 %
    with deadline(60):
        code, out, _ = run_cli(capsys, "check", "--json", str(tmp_path / "user"),
                               plugins=False)
    doc = json.loads(out)
    assert code == 0 and doc["problems"] == []
    (w,) = doc["warnings"]
    assert w["key"] == "published.params" and "+3.3%" in w["message"]
    with deadline(60):
        reg = roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "user"])
    assert reg.workload("tiny-p").published.params == 92000


def test_params_within_two_percent_pass_quietly(tmp_path, capsys):
    published(tmp_path / "user", 95000)
    code, problems = check(capsys, tmp_path / "user")
    assert (code, problems) == (0, [])
