"""Training validation: the cases of specs/training load, cite their source, and the score
on both bases is pinned at what the estimator reaches (targets: median 8 %, max 25 %)."""

import json

import pytest

from roofkit import SpecError, build_registry
from roofkit.cli import main
from roofkit.fleet.validation import run


@pytest.fixture(scope="module")
def report(registry):
    return run(registry)


def test_every_case_has_a_source_and_a_layout(registry):
    cases = list(registry.catalogues["training"].values())
    assert len(cases) >= 25
    for c in cases:
        assert c.source.url.startswith("http") and c.source.where


def test_score_is_pinned(report):
    """What the calibrated basis reaches today; the issue's targets (median <= 8 %, max
    <= 25 %) are not met: every scored case is predicted too fast (see docs/fleet.md)."""
    s = report.summary()
    # 25 since the V100 calibration (GPUInspector.jl) scores the four Megatron README V100
    # cases: 21 cases at 27.6 % median before, 25 at 21.4 % after
    assert s["calibrated"]["scored"] == 25
    assert s["calibrated"]["median_abs_error"] <= 0.22
    assert s["calibrated"]["max_abs_error"] <= 0.51
    assert s["calibrated"]["median_abs_error"] < s["datasheet"]["median_abs_error"]


def test_cases_the_layout_rules_refuse_are_listed_not_scored(report):
    bloom = next(c for c in report.cases if c.name.startswith("bloom"))
    assert not bloom.scored and "does not divide the 70 layers" in bloom.reason


def test_a_case_whose_layout_misses_its_devices_is_refused(tmp_path):
    d = tmp_path / "training"
    d.mkdir()
    (d / "bad.toml").write_text('''name = "bad"
workload = "llama-3.1-8b"
cluster = "dgx-h100"
devices = 16
metric = "step_s"
value = 1.0
[layout]
tp = 8
[source]
url = "https://example.org"
where = "nowhere"
''')
    with pytest.raises(SpecError, match="not the 16 devices"):
        build_registry(entry_points=False, spec_paths=[tmp_path], cache=False)


def test_cli_validate_training_json(capsys):
    assert main(["validate", "--kind", "training", "--json", "--no-plugins"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["kind"] == "training" and len(d["cases"]) >= 25
    assert set(d["summary"]) == {"datasheet", "calibrated"}
