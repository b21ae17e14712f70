import json

import pytest

from roofkit.cli import main


def run(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


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


def test_check_reports_every_problem_and_exits_1(capsys, tmp_path):
    path = tmp_path / "mydev.toml"
    path.write_text("""
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
""")
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
