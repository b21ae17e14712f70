"""The calibration and validation spec kinds: loaded, checked, strict."""

import pytest

from roofkit.cli import main
from roofkit.errors import SpecError
from roofkit.testing import make_registry, write_spec


def test_roofkit_check_passes_for_calibration_and_validation_specs(capsys):
    from roofkit.paths import builtin_specs_dir

    root = builtin_specs_dir()
    code = main(["check", str(root / "calibration"), str(root / "validation")])
    assert code == 0, capsys.readouterr().err


def test_the_catalogues_hold_devices_calibrations_and_cases(registry):
    cals = registry.catalogues["calibration"]
    assert {"a100-80gb", "h100-sxm", "h200", "mi300x", "host"} <= set(cals)
    assert cals["host"].device is None and {"vllm-v0", "vllm-v1"} <= set(cals["host"].engines)
    cases = registry.catalogues["validation"]
    assert len(cases) >= 40
    for case in cases.values():
        assert case.source.url.startswith("https://") and case.source.where


def test_a_case_with_an_unknown_key_is_refused_with_its_path(tmp_path):
    write_spec(tmp_path, "validation", "bad", """
        name = "bad"
        kind = "serving"
        workload = "llama-2-7b"
        device = "h100"
        metric = "ttft_ms"
        value = 10.0
        [config]
        engine = "x"
        batchsize = 4
        [source]
        url = "https://example.com"
        where = "here"
        """)
    with pytest.raises(SpecError) as err:
        make_registry(spec_paths=[tmp_path], cache=False)
    assert "config.batchsize" in str(err.value) and "bad.toml" in str(err.value)


def test_a_case_of_an_unknown_workload_needs_a_reason(tmp_path):
    text = """
        name = "ghost"
        kind = "serving"
        workload = "ghost-7b"
        device = "h100"
        metric = "ttft_ms"
        value = 10.0
        {extra}
        [config]
        engine = "x"
        [source]
        url = "https://example.com"
        where = "here"
        """
    write_spec(tmp_path, "validation", "ghost", text.format(extra=""))
    with pytest.raises(SpecError, match="unknown workload 'ghost-7b'"):
        make_registry(spec_paths=[tmp_path], cache=False)
    write_spec(tmp_path, "validation", "ghost",
               text.format(extra='not_predicted = "no such workload in the catalogue"'))
    reg = make_registry(spec_paths=[tmp_path], cache=False)
    assert reg.catalogues["validation"]["ghost"].not_predicted
