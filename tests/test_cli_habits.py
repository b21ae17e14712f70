"""CLI habits: ``python -m roofkit``, range syntax of list options, shell completion
generated from the parser, and naming the choice an ambiguous alias makes."""

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roofkit.cli import build_parser, common
from roofkit.cli.completion import commands
from roofkit.testing import run_cli


def test_python_m_roofkit_runs_the_cli():
    out = subprocess.run([sys.executable, "-m", "roofkit", "--version"], capture_output=True,
                         text=True, check=True)
    assert out.stdout.startswith("roofkit ")


@pytest.mark.parametrize(("text", "expected"), [
    ("1:256:x2", [1, 2, 4, 8, 16, 32, 64, 128, 256]),
    ("1024:32768:x2", [1024, 2048, 4096, 8192, 16384, 32768]),
    ("1:8:+1", list(range(1, 9))),
    ("2:9:+3", [2, 5, 8]),  # 11 would pass the stop
    ("4:6", [4, 5, 6]),
    ("1,8:32:x2,64", [1, 8, 16, 32, 64]),
    ("8,1:8:x2", [8, 1, 2, 4]),  # repeats dropped, first place kept
])
def test_list_options_take_ranges(text, expected):
    assert common.int_list(text) == expected


@pytest.mark.parametrize("text", ["1:256:x1", "8:1:x2", "1:8:-1", "1:8:y2", "0:8:+1", "a"])
def test_a_bad_range_is_a_clear_argument_error(text):
    with pytest.raises(argparse.ArgumentTypeError, match=r"range|integers"):
        common.int_list(text)


def test_sweep_expands_a_range_of_batches(capsys):
    code, out, _ = run_cli(capsys, "sweep", "llama-3.1-8b", "h100-sxm", "-b", "1:64:x4",
                           "--json")
    assert code == 0
    assert [r["batch_size"] for r in json.loads(out)["rows"]] == [1, 4, 16, 64]


def test_an_ambiguous_alias_names_its_choice_and_the_others(capsys):
    code, out, err = run_cli(capsys, "solve", "llama-3.1-8b", "a100", "--json")
    assert code == 0
    assert "a100 -> a100-80gb (also: a100-40gb, a100-80gb-pcie)" in err
    json.loads(out)  # stdout stays pure JSON


def test_an_ambiguous_alias_in_a_device_list_or_a_cluster_is_named_too():
    from types import SimpleNamespace

    def notes(**given):
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            common.announce_names(SimpleNamespace(spec_path=None, no_plugins=False,
                                                  **given))
        return err.getvalue()

    # plan's --devices is one comma-separated string; train's cluster may be NxDEVICE
    listed = notes(workload="llama-3.1-8b", devices="a100,h100-sxm")
    assert "a100 -> a100-80gb (also: a100-40gb, a100-80gb-pcie)" in listed
    assert "h100-sxm ->" not in listed
    assert "a100 -> a100-80gb" in notes(workload="llama-3.1-8b", cluster="8xa100")
    assert "h100 -> h100-sxm (also: h100-pcie)" in notes(workload="llama-3.1-8b",
                                                        device="4xh100")
    assert "->" not in notes(workload="llama-3.1-8b", cluster="8xa100-80gb")


def test_an_exact_name_gets_no_note(capsys):
    code, _, err = run_cli(capsys, "solve", "llama-3.1-8b", "a100-80gb", "--json")
    assert code == 0 and "->" not in err


def _bash_complete(script, *words: str) -> list[str]:
    """COMPREPLY for ``roofkit WORDS...``, run in an empty folder beside the script so
    file-name completion adds nothing."""
    line = " ".join(f"'{w}'" for w in words)
    cmd = (f"source {script}; COMP_WORDS=(roofkit {line}); COMP_CWORD={len(words)}; "
           '_roofkit; printf "%s\\n" "${COMPREPLY[@]}"')
    # in an empty folder: a word may also complete a file name, and the repository root
    # holds files that start like commands
    empty = Path(script).parent / "empty"
    empty.mkdir(exist_ok=True)
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True,
                          cwd=empty).stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash to run the script")
def test_bash_completion_completes_commands_options_choices_and_names(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "completion", "bash")
    assert code == 0
    script = tmp_path / "roofkit.bash"
    script.write_text(out)
    assert _bash_complete(script, "se") == ["serve"]
    assert "--max-load" in _bash_complete(script, "serve", "x", "--max")
    assert _bash_complete(script, "serve", "x", "--basis", "") == ["datasheet", "calibrated"]
    assert "llama-3.1-8b" in _bash_complete(script, "serve", "llama-3.1-8")
    assert "h100-sxm" in _bash_complete(script, "decode", "llama-3.1-8b", "h100-s")
    assert _bash_complete(script, "plot", "roof") == ["roofline"]  # a nested level
    assert "--pareto" in _bash_complete(script, "plot", "sweep", "x", "--par")


def test_every_subcommand_and_option_is_in_each_shells_script(capsys):
    _, cmds = commands(build_parser())
    names = {c.name for c in cmds}
    assert {"serve", "decode", "sweep", "completion"} <= names
    for shell in ("bash", "zsh", "fish"):
        code, out, _ = run_cli(capsys, "completion", shell)
        assert code == 0
        for c in cmds:
            assert c.name in out
        serve = next(c for c in cmds if c.name == "serve")
        for flag, _, _ in serve.options:
            assert (flag if shell != "fish" else flag.lstrip("-")) in out
    _, fish, _ = run_cli(capsys, "completion", "fish")
    assert "complete -c roofkit -n '__fish_seen_subcommand_from serve' -l basis -x -a " \
           "'datasheet calibrated'" in fish
    _, zsh, _ = run_cli(capsys, "completion", "zsh")
    assert zsh.startswith("#compdef roofkit")
