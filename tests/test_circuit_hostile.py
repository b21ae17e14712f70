"""Hostile or broken rule and template specs are refused when the registry loads: a
SpecError names the file and the rule, and nothing in them runs."""

import json
import textwrap

import pytest

import roofkit
from roofkit.errors import SpecError

HOSTILE = {
    "import": "__import__('os').system('touch {marker}')",
    "open": "open('{marker}', 'w')",
    "attribute": "rows.__class__",
    "subscript": "rows[0]",
    "lambda": "(lambda: 1)()",
    "comprehension": "[open('{marker}', 'w') for _ in range(1)]",
    "string": "'{marker}'",
    "blowup": "9**9**9",
    "big_power": "rows ** 10 ** 4",
    "deep_parens": "(" * 500 + "rows" + ")" * 500,
    "deep_unary": "-" * 500 + "rows",
    "long_sum": " + ".join(["rows"] * 400),
}


def _rule(folder, flops):
    """A linear rule whose decode FLOPs are ``flops`` (a TOML basic string via JSON)."""
    (folder / "ops").mkdir(parents=True, exist_ok=True)
    path = folder / "ops" / "linear.toml"
    path.write_text(f'overrides = "linear"\nname = "linear"\ncompute = "matrix"\n'
                    f'[defaults]\nbias = 0\n'
                    f'[decode]\nflops = {json.dumps(flops)}\nweight_bytes = "k * n * w_bytes"\n'
                    f'[memory]\nparams = "k * n"\n')
    return path


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_rule_expressions_are_refused_at_load(tmp_path, kind):
    marker = tmp_path / "ran"
    path = _rule(tmp_path / "specs", HOSTILE[kind].format(marker=marker))
    with pytest.raises(SpecError) as info:
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "specs"])
    text = str(info.value)
    assert f"@ {path.resolve()}:decode.flops" in text
    assert "refused expression" in text
    assert not marker.exists()


def test_hostile_template_dims_are_refused_at_load(tmp_path):
    marker = tmp_path / "ran"
    d = tmp_path / "specs" / "circuits"
    d.mkdir(parents=True)
    (d / "evil.toml").write_text(textwrap.dedent(f'''\
        name = "evil"
        [[nodes]]
        id = "embed"
        section = "embed"
        op = "embed"
        role = "embedding"
        dims = {{ vocab = "__import__('os').system('touch {marker}')", hidden = "hidden.real" }}
        '''))
    with pytest.raises(SpecError) as info:
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "specs"])
    text = str(info.value)
    assert "evil.toml:nodes[0].dims.vocab" in text
    assert "evil.toml:nodes[0].dims.hidden" in text
    assert not marker.exists()


def test_a_rule_naming_an_unknown_dim_is_refused(tmp_path):
    path = _rule(tmp_path / "specs", "2 * rows * k * nn")
    with pytest.raises(SpecError, match=r"unknown name 'nn' \(did you mean 'n'") as info:
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "specs"])
    assert f"{path.resolve()}:decode.flops" in str(info.value)


def test_a_rule_for_an_unknown_op_kind_is_refused(tmp_path):
    d = tmp_path / "specs" / "ops"
    d.mkdir(parents=True)
    (d / "lineer.toml").write_text('name = "lineer"\n[decode]\nflops = "rows"\n')
    with pytest.raises(SpecError, match="no op kind 'lineer' is registered; did you mean 'linear'"):
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "specs"])


def test_a_template_with_an_unknown_op_kind_or_param_is_refused(tmp_path):
    d = tmp_path / "specs" / "circuits"
    d.mkdir(parents=True)
    (d / "odd.toml").write_text(textwrap.dedent('''\
        name = "odd"
        requires = ["hidden", "vocab"]
        [[nodes]]
        id = "embed"
        section = "embed"
        op = "embedd"
        [[nodes]]
        id = "head"
        section = "head"
        op = "lm_head"
        role = "lm_head"
        dims = { vocab = "vocab", hidden = "hidden", width = "hidden" }
        '''))
    with pytest.raises(SpecError) as info:
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "specs"])
    text = str(info.value)
    assert "unknown op kind 'embedd'; did you mean 'embed'" in text
    assert "odd.toml:nodes[1].dims.width" in text


def test_roofkit_check_reports_the_file_and_rule(tmp_path, capsys):
    from roofkit.cli import main

    path = _rule(tmp_path / "specs", "9**9**9")
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr()
    assert "decode.flops" in err.out + err.err
