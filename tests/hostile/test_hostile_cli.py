"""Hostile command lines: every failure is one message, with ``--json`` one JSON error
object on stdout, an exit code of 1 (bad input) or 2 (does not fit), never a traceback,
a hang, a partial document or an absurd request taken at its word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hostile_run import kept_promises, run_cli, run_script

from roofkit.cli import common

W, D = "llama-3.1-8b", "h100"
HUGE = "1" + "0" * 400  # 10**400: past any float

#: (argv, exit code, kind of the JSON error, words its message holds)
FAILURES = [
    (["solve", "nope", D], 1, "unknown_name", "Unknown workload 'nope'"),
    (["serve", "llama-2-7b", "h10"], 1, "unknown_name", "Unknown device 'h10'"),
    (["solve", W, D, "--batch", "0"], 1, "bad_argument", "batch_size must be an integer >= 1"),
    (["solve", W, D, "--efficiency", "nan"], 1, "bad_argument", "efficiency must be in"),
    (["solve", "/no/such/file.toml", D], 1, "spec", "no such spec file"),
    (["devices", "--bogus"], 1, "usage", "unrecognized arguments: --bogus"),
    (["decode", W, D, "--batch", "x"], 1, "usage", "invalid int value"),
    (["decode", W, D, "--top", "-1"], 1, "usage", "expected an integer >= 0"),
    (["solve", W, D, "--batch", HUGE], 1, "bad_argument", "MAX_BATCH"),
    (["fit", W, D, "--seqs", HUGE], 1, "bad_argument", "MAX_BATCH"),
    (["decode", W, D, "--context", HUGE], 1, "bad_argument", "MAX_TOKENS"),
    (["serve", W, D, "--output-len", "100000000"], 1, "bad_argument", "MAX_OUTPUT_TOKENS"),
    (["serve", W, D, "--max-load", "--max-requests", "0"], 1, "bad_argument",
     "max_requests must be an integer >= 1, got 0"),
    (["serve", W, D, "--max-load", "--max-requests", "-1"], 1, "bad_argument",
     "max_requests must be an integer >= 1, got -1"),
    (["serve", W, D, "--max-requests", "0"], 1, "error", "belong to --max-load"),
    (["sweep", W, D, "-b", "0"], 1, "bad_argument", ">= 1"),
    (["simulate", W, D, "--rate", "10", "--requests", "100000000"], 1, "bad_argument",
     "MAX_REQUESTS"),
    (["simulate", W, D, "--concurrency", "100000000"], 1, "bad_argument", "MAX_BATCH"),
    (["sweep", W, D, "--mode", "decode", "-b", "99999999999999999999"], 1, "bad_argument",
     "MAX_BATCH"),
    (["scenarios", "--kind", "host_dispatc"], 1, "unknown_name", "Did you mean 'host_dispatch'"),
    (["scenario", "--kind", "nope"], 1, "unknown_name", "scenario kind"),
    (["serve", "llama-3.1-70b", D, "--max-load"], 2, "does_not_fit", "does not fit"),
    # names checked before a minute of measurement, and no path out of --out
    (["calibrate", "--device", "h10", "--out", "cal"], 1, "unknown_name", "Unknown device 'h10'"),
    (["calibrate", "--name", "../../outside", "--out", "cal"], 1, "bad_argument",
     "name must be a spec key"),
]


@pytest.mark.parametrize(("argv", "code", "kind", "words"), FAILURES,
                         ids=[" ".join(a)[:60] for a, *_ in FAILURES])
def test_every_failure_is_one_message_and_its_exit_code(argv, code, kind, words):
    o = run_cli(*argv)
    kept_promises(o)
    assert o.code == code, o
    assert words in o.err
    assert o.out == ""  # text mode: nothing half-printed on stdout


@pytest.mark.parametrize(("argv", "code", "kind", "words"), FAILURES,
                         ids=[" ".join(a)[:60] for a, *_ in FAILURES])
def test_with_json_every_failure_is_one_json_error_object(argv, code, kind, words):
    o = run_cli(*argv, "--json")
    error = kept_promises(o, json_mode=True)
    assert o.code == code
    assert error["kind"] == kind, error
    assert words in error["message"]


def test_an_unknown_name_hints_at_the_closest():
    error = kept_promises(run_cli("serve", "llama-2-7b", "h10", "--json"), json_mode=True)
    assert "h100" in error["hint"]


def test_a_spec_error_locates_the_file_and_the_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\ndisplay_name = "Bad"\ncategory = "cloud"\n'
                   '[memory]\ncapacity = "80 GB"\nbandwidth = 3\n')
    error = kept_promises(run_cli("show", bad, "--json"), json_mode=True)
    assert error["kind"] == "spec"
    assert error["file"] and error["file"].endswith("bad.toml")
    assert error["key"] is not None and error["problems"]


def test_the_console_script_prints_the_json_error_for_a_10_to_the_400_batch():
    o = run_script("solve", W, D, "--batch", HUGE, "--json")
    error = kept_promises(o, json_mode=True)
    assert o.code == 1 and "MAX_BATCH" in error["message"]
    assert "OverflowError" not in o.err


def test_serve_require_fit_json_prints_the_estimate_and_exits_2():
    o = run_cli("serve", "llama-3.1-70b", D, "--batch", "8", "--require-fit", "--json")
    kept_promises(o)
    assert o.code == 2
    doc = json.loads(o.out)
    assert doc["fits"] is False and doc["workload"] == "llama-3.1-70b"
    assert "does not fit" in o.err


def test_serve_require_fit_that_fits_exits_0():
    o = run_cli("serve", W, D, "--batch", "8", "--require-fit", "--json")
    assert o.code == 0 and json.loads(o.out)["fits"] is True


def test_a_nan_in_a_result_is_an_error_before_anything_is_printed(capsys):
    with pytest.raises(Exception, match="JSON cannot represent") as info:
        common.print_json({"rows": [1.0, 2.0], "latency_ms": float("nan")})
    assert isinstance(info.value, common_error())
    assert capsys.readouterr().out == ""  # never a half-written document


def common_error():
    from roofkit import RoofkitError

    return RoofkitError


def test_a_100_kb_bad_value_is_cut_in_the_message():
    o = run_cli("solve", "x" * 100_000, D, "--json")
    error = kept_promises(o, json_mode=True)
    assert len(error["message"]) < 1200 and "more characters" in error["message"]
    assert len(o.err) < 2500


def test_an_internal_error_is_one_message_not_a_traceback(monkeypatch):
    from roofkit.cli import engine

    def broken(args):
        raise KeyError("an unexpected bug")

    monkeypatch.setattr(engine, "cmd_solve", broken)
    o = run_cli("solve", W, D, "--json")
    error = kept_promises(o, json_mode=True)
    assert o.code == 1 and error["kind"] == "internal"
    assert "ROOFKIT_DEBUG" in error["hint"]


# -- every option of every command, with values a careless or hostile user types -----------

_ROOT = Path(__file__).resolve().parents[2]
#: a valid value for each positional argument, by its name
_POSITIONALS = {"workload": [W], "device": [D], "devices": [D],
                "paths": [str(_ROOT / "specs" / "devices")],
                "name": ["Gpt2XlEagerDecodeDispatch"], "shell": ["bash"],
                "cluster": ["dgx-a100"],
                "path": [str(_ROOT / "tests" / "data" / "hf" / "llama-3.2-1b" / "config.json")]}
#: commands too slow to run per value: validate predicts every published case, calibrate
#: times microbenchmarks on this machine (about a minute) once its names check out (its
#: --device and --name are in FAILURES above)
_SKIP = {"validate", "calibrate"}
HOSTILE_VALUES = ["-1", "nan", HUGE, "x" * 100_000]


def _option_cases():
    import argparse

    from roofkit.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    cases = []
    for name, sp in sub.choices.items():
        if name in _SKIP:
            continue
        actions = [a for a in sp._actions if not isinstance(a, argparse._HelpAction)]
        positionals = [a.dest for a in actions if not a.option_strings]
        if any(p not in _POSITIONALS for p in positionals):
            continue  # a command this suite does not know how to call yet
        head = [name] + [v for p in positionals for v in _POSITIONALS[p]]
        json_flag = ["--json"] if any("--json" in a.option_strings for a in actions) else []
        for a in actions:
            if not a.option_strings or a.nargs == 0 or "--spec-path" in a.option_strings:
                continue  # a spec path rebuilds the catalogue: test_hostile_files covers it
            # one value per option, in turn, so every value meets every kind of option
            value = HOSTILE_VALUES[len(cases) % len(HOSTILE_VALUES)]
            cases.append([*head, a.option_strings[-1], value, *json_flag])
    return cases


def _commands_with_options():
    import argparse

    from roofkit.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {name for name, sp in sub.choices.items() if any(
        a.option_strings and a.nargs != 0 and "--spec-path" not in a.option_strings
        for a in sp._actions)}


def test_the_hostile_runner_covers_every_command_but_the_slow_ones():
    covered = {argv[0] for argv in _option_cases()}
    assert covered == _commands_with_options() - _SKIP, _commands_with_options() - covered
    assert {argv[-2] if argv[-1] == "--json" else argv[-1] for argv in _option_cases()} == \
        set(HOSTILE_VALUES)


@pytest.mark.parametrize("argv", _option_cases(), ids=lambda a: " ".join(a)[:70])
def test_every_option_of_every_command_survives_hostile_values(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an option naming an output file (-o -1) writes here
    o = run_cli(*argv)
    kept_promises(o, json_mode="--json" in argv)
    if o.code:
        assert len(o.err) < 5000  # a refused 100 KB value is never echoed whole


def test_the_guarantees_page_names_every_hostile_file_every_error_kind_and_bound():
    from pathlib import Path

    from roofkit import bounds
    from roofkit.cli.failure import KINDS

    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "guarantees.md").read_text()
    for test_file in sorted((root / "tests" / "hostile").glob("test_*.py")):
        assert f"`{test_file.name}`" in page, f"docs/guarantees.md omits {test_file.name}"
    for kind in KINDS:
        assert f"| `{kind}` |" in page, f"docs/guarantees.md omits the error kind {kind!r}"
    for name in ("MAX_BATCH", "MAX_TOKENS", "MAX_OUTPUT_TOKENS", "MAX_DEVICES", "MAX_REQUESTS"):
        value = getattr(bounds, name)
        assert f"| `{name}` | 2^{value.bit_length() - 1}" in page, name
