import json

import pytest

from roofkit.cli import main
from roofkit.testing import run_cli


def run(capsys, *args):
    return run_cli(capsys, *args)


def test_devices_json_lists_the_catalogue_with_peaks_and_sources(capsys):
    code, out, _ = run(capsys, "devices", "--json")
    assert code == 0
    devices = json.loads(out)
    assert len(devices) >= 30
    for d in devices:
        assert d["peaks_flop_per_s"] and d["memory_bytes"] > 0 and d["bandwidth_bytes_per_s"] > 0
        assert d["sources"]
    assert {d["category"] for d in devices} == {"cloud", "workstation", "mobile", "edge", "tiny"}


def test_devices_table_prints(capsys):
    code, out, _ = run(capsys, "devices")
    assert code == 0 and "h100-sxm" in out and "TFLOP/s" in out


def test_show_gives_every_number_with_unit_and_source(capsys):
    code, out, _ = run(capsys, "show", "h100", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["name"] == "h100-sxm"
    assert d["memory"]["bandwidth"]["value"] == 3.35e12
    assert d["memory"]["bandwidth"]["unit"] == "B/s"
    assert d["compute"]["bf16"]["unit"] == "FLOP/s"

    def quantities(node):
        if isinstance(node, dict) and "unit" in node and "value" in node:
            yield node
        elif isinstance(node, dict):
            for v in node.values():
                yield from quantities(v)
    qs = list(quantities(d))
    assert len(qs) >= 10
    assert all(q["source"] for q in qs)


def test_show_accepts_a_toml_path(capsys):
    from roofkit.paths import builtin_specs_dir

    code, out, _ = run(capsys, "show", str(builtin_specs_dir() / "devices" / "h100-sxm.toml"),
                       "--json")
    assert code == 0 and json.loads(out)["name"] == "h100-sxm"


CHECK_BAD = """
name = "my-dev"
display_name = "Mine"
category = "edge"
default_slot = "bf16"
[compute]
bf16 = "989 TFLOPS"
[memory]
capacity = "-80 GB"
bandwith = "3 TB/s"
bandwidth = "3 TB/s"
[overheads]
dispatch = "10 us"
layer = "10 us"
[sources]
s = "https://example.org"
[provenance]
compute = "s"
memory = "s"
overheads = "s"
"""


def test_check_reports_every_problem_and_exits_1(capsys, tmp_path):
    path = tmp_path / "mydev.toml"
    path.write_text(CHECK_BAD)
    code, _, err = run(capsys, "check", str(path))
    assert code == 1
    lines = [x for x in err.splitlines() if " @ " in x]
    assert len(lines) == 3
    assert any("write '989 TFLOP/s'" in x and f"{path}:compute.bf16" in x for x in lines)
    assert any("must be positive" in x and f"{path}:memory.capacity" in x for x in lines)
    assert any("did you mean 'bandwidth'" in x and f"{path}:memory.bandwith" in x for x in lines)


def test_check_passes_on_the_builtin_specs(capsys):
    from roofkit.paths import builtin_specs_dir

    code, out, err = run(capsys, "check", str(builtin_specs_dir()))
    assert code == 0, err
    assert "OK" in out


def test_unknown_device_exits_1_with_a_suggestion(capsys):
    code, _, err = run(capsys, "show", "h10")
    assert code == 1 and "Did you mean" in err


@pytest.mark.parametrize("args", [["nonsense"], ["show"]])
def test_bad_usage_exits_1(capsys, args):
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 1


# -- show: sources of nested tables and plain numbers --------------------------------------

def test_show_json_gives_nested_tables_their_source_url(capsys):
    _, out, _ = run(capsys, "show", "h100", "--json")
    d = json.loads(out)
    datasheet = d["sources"]["datasheet"]
    assert d["memory"]["capacity"]["source_url"] == d["sources"]["runtime"]
    assert d["memory"]["bandwidth"]["source_url"] == datasheet
    assert d["power"]["tdp"]["source_url"] == datasheet
    assert d["sram"]["capacity"]["source_url"] == d["sources"]["whitepaper"]
    assert d["interconnect"]["latency"]["source_url"] == d["sources"]["nccl_latency"]


def test_show_json_sources_plain_numbers_too(capsys):
    _, out, _ = run(capsys, "show", "h100", "--json")
    d = json.loads(out)
    fraction = d["memory"]["usable_fraction"]
    assert fraction["value"] == 0.9 and fraction["source"] == "vllm"
    assert fraction["source_url"] == d["sources"]["vllm"]
    devices = d["interconnect"]["max_devices"]
    assert devices["value"] == 8 and devices["source_url"] == d["sources"]["datasheet"]


def test_show_text_says_sizes_are_bytes(capsys):
    code, out, _ = run(capsys, "show", "h100")
    assert code == 0 and "B = byte = 8 bits (b)" in out
    assert "usable_fraction" in out and "max_devices" in out


# -- devices --category ------------------------------------------------------------------------

def test_an_unknown_category_exits_1_listing_the_categories_and_suggesting(capsys):
    with pytest.raises(SystemExit) as info:
        main(["devices", "--category", "clod"])
    err = capsys.readouterr().err
    assert info.value.code == 1
    assert "did you mean 'cloud'" in err and "cloud, workstation, mobile, edge, tiny" in err


def test_a_category_is_case_insensitive(capsys):
    code, out, _ = run(capsys, "devices", "--category", "Tiny", "--json")
    assert code == 0 and {d["category"] for d in json.loads(out)} == {"tiny"}


# -- check --json, relative paths, unreadable files ---------------------------------------------

def test_check_json_lists_file_key_message_and_the_count(capsys, tmp_path):
    path = tmp_path / "mydev.toml"
    path.write_text(CHECK_BAD)
    code, out, _ = run(capsys, "check", str(path), "--json")
    report = json.loads(out)
    assert code == 1 and report["count"] == 3 == len(report["problems"]) and report["files"] == 1
    assert {(p["file"], p["key"]) for p in report["problems"]} == {
        (str(path), "compute.bf16"), (str(path), "memory.capacity"),
        (str(path), "memory.bandwith")}


def test_check_json_of_good_specs_has_no_problems(capsys):
    from roofkit.paths import builtin_specs_dir

    code, out, _ = run(capsys, "check", str(builtin_specs_dir() / "devices"), "--json")
    report = json.loads(out)
    assert code == 0 and report["count"] == 0 and report["files"] >= 30


def test_check_resolves_a_relative_path_before_telling_its_kind(capsys, monkeypatch):
    from roofkit.paths import builtin_specs_dir

    monkeypatch.chdir(builtin_specs_dir() / "calibration")
    code, _, err = run(capsys, "check", "h100-sxm.toml")
    assert code == 0, err


def test_check_reports_a_loose_files_syntax_error_with_file_and_line(capsys, tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('name = "x"\ncompute = \n')
    code, _, err = run(capsys, "check", str(path))
    assert code == 1 and "TOML syntax error" in err and "line 2" in err and str(path) in err
    assert "cannot tell what kind" not in err


def test_check_reports_a_file_that_is_not_utf8(capsys, tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    code, _, err = run(capsys, "check", str(path))
    assert code == 1 and "not UTF-8" in err and str(path) in err


def test_check_checks_every_loose_file_of_a_folder(capsys, tmp_path):
    (tmp_path / "broken.toml").write_text("name = \n")
    (tmp_path / "mydev.toml").write_text(CHECK_BAD)
    code, _, err = run(capsys, "check", str(tmp_path))
    assert code == 1 and "TOML syntax error" in err and "did you mean 'bandwidth'" in err


# -- global options after the subcommand -----------------------------------------------------

TOY_DEVICE = CHECK_BAD.replace('"989 TFLOPS"', '"989 TFLOP/s"').replace(
    'capacity = "-80 GB"', 'capacity = "80 GB"').replace('bandwith = "3 TB/s"\n', "")


def test_spec_path_and_no_plugins_work_after_the_subcommand(capsys, tmp_path):
    (tmp_path / "devices").mkdir()
    (tmp_path / "devices" / "my-dev.toml").write_text(TOY_DEVICE)
    code, out, err = run(capsys, "show", "my-dev", "--spec-path", str(tmp_path), "--no-plugins",
                         "--json")
    assert code == 0, err
    assert json.loads(out)["name"] == "my-dev"


def test_spec_paths_before_and_after_the_subcommand_both_layer(capsys, tmp_path):
    for name in ("a", "b"):
        (tmp_path / name / "devices").mkdir(parents=True)
        (tmp_path / name / "devices" / f"dev-{name}.toml").write_text(
            TOY_DEVICE.replace('"my-dev"', f'"dev-{name}"'))
    code, out, err = run(capsys, "--spec-path", str(tmp_path / "a"), "devices",
                         "--spec-path", str(tmp_path / "b"), "--json")
    assert code == 0, err
    assert {"dev-a", "dev-b"} <= {d["name"] for d in json.loads(out)}


def test_every_subcommand_takes_the_global_options():
    from roofkit.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert len(sub.choices) >= 10
    for name, p in sub.choices.items():
        assert {"--spec-path", "--no-plugins"} <= set(p._option_string_actions), name


# -- names of the other kind ---------------------------------------------------------------

def test_show_of_a_workload_says_it_is_a_workload(capsys):
    code, _, err = run(capsys, "show", "llama-3.1-8b")
    assert code == 1 and "'llama-3.1-8b' is a workload, not a device" in err
