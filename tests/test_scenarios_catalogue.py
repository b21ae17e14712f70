"""Named scenarios as TOML specs: the builtin catalogue, the check against the registered
kinds, lookup, and a plugin that adds both a kind and a spec dir of scenarios."""

from __future__ import annotations

import textwrap
from pathlib import Path

import attrs
import pytest

import roofkit
from roofkit import Q, ScenarioKind, SpecError, UnknownNameError, hookimpl
from roofkit.scenarios import (
    HostDispatchScenario,
    Scenario,
    ScenarioSpec,
    count_input,
    quantity_input,
    scenario_class,
)

SPECS = Path(__file__).resolve().parents[1] / "specs"
BUILTIN_NAMES = {"Gpt2XlEagerDecodeDispatch", "ResNet50CompileBreakeven", "SmallKernelDispatch",
                 "LargeKernelDispatch", "EagerMlpTrainingStep",
                 "Llama32FinetuneCompileBreakeven", "Llama2CudaGraphDecode"}


def fresh_registry(*, plugins=(), spec_paths=()):
    """Builtin plugins, builtin scenario specs (no other catalogue), plus what is given."""
    return roofkit.build_registry(entry_points=False, plugins=list(plugins), cache=False,
                                  blocked=["roofkit_builtins.specs"],
                                  spec_paths=[SPECS / "scenarios", *spec_paths])


@pytest.fixture(scope="module")
def reg():
    return fresh_registry()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


GOOD = """
    kind = "host_dispatch"
    name = "TinyStep"
    description = "A test step."
    [inputs]
    ops_per_block = 2
    dispatch = "10 us"
    launch = "5 us"
    device_time = "1 ms"
    [sources]
    made_up = "a test"
    [provenance]
    inputs = "made_up"
"""


# -- the builtin catalogue -----------------------------------------------------------------

def test_builtin_kinds_are_registered_by_the_builtins_plugin(reg):
    assert set(reg.scenario_kinds) == {"host_dispatch", "compile_breakeven", "graph_capture"}
    assert reg.provider("scenario_kinds", "host_dispatch") == "roofkit_builtins.scenario_kinds"
    assert reg.scenario_kind("HOST_DISPATCH").cls is HostDispatchScenario


def test_every_builtin_scenario_builds_and_evaluates(reg):
    specs = list(reg.catalogues["scenarios"].values())
    assert {s.name for s in specs} >= BUILTIN_NAMES
    for spec in specs:
        obj = reg.scenario(spec.name)
        kind = reg.scenario_kind(spec.kind)
        assert isinstance(obj, kind.cls)
        values = obj.derived()
        assert values, spec.name
        for v in values.values():
            assert v is not None


def test_every_numeric_input_of_a_builtin_scenario_has_provenance(reg):
    for spec in reg.catalogues["scenarios"].values():
        for key, value in spec.inputs.items():
            if isinstance(value, int | float) or any(c.isdigit() for c in str(value)):
                entry = spec.provenance.get(f"inputs.{key}") or spec.provenance.get("inputs")
                assert entry, f"{spec.name}: inputs.{key} has no provenance"


def test_lookup_by_name_alias_any_case_and_toml_path(reg):
    s = reg.scenario("Gpt2XlEagerDecodeDispatch")
    assert reg.scenario("gpt2xleagerdecodedispatch") is s
    assert reg.scenario("gpt2-xl-eager-decode-dispatch") is s
    path = SPECS / "scenarios" / "gpt2-xl-eager-decode-dispatch.toml"
    assert reg.scenario(path) == s and reg.scenario(str(path)) == s
    assert reg.scenario(s) is s
    assert reg.origin("Gpt2XlEagerDecodeDispatch") == path.resolve()


def test_an_unknown_name_suggests_names_as_written(reg):
    with pytest.raises(UnknownNameError, match="Did you mean 'Gpt2XlEagerDecodeDispatch'"):
        reg.scenario("Gpt2XlEagerDecode")
    with pytest.raises(roofkit.ArgumentError, match="scenario name"):
        reg.scenario(3)


def test_quantity_inputs_are_parsed_at_load_not_when_built(reg, monkeypatch):
    from roofkit import units
    from roofkit.scenarios import instantiate

    spec = reg.catalogues["scenarios"]["ResNet50CompileBreakeven"]
    assert spec.parsed["eager_rate"] == ("rate", 1450.0)
    assert spec.parsed["compile_time"] == ("time", 30.0)

    def refuse(*args, **kwargs):
        raise AssertionError("parsed again")

    monkeypatch.setattr(units, "parse", refuse)
    assert instantiate(reg, spec).breakeven_items == pytest.approx(133_607.14, rel=1e-6)


def test_scenario_specs_survive_the_spec_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ROOFKIT_NO_CACHE", raising=False)
    kwargs = dict(entry_points=False, blocked=["roofkit_builtins.specs"],
                  spec_paths=[SPECS / "scenarios"])
    first = roofkit.build_registry(**kwargs).scenario("ResNet50CompileBreakeven")
    warm = roofkit.build_registry(**kwargs)
    assert warm.catalogues["scenarios"]["ResNet50CompileBreakeven"].parsed
    assert warm.scenario("ResNet50CompileBreakeven") == first


# -- the check -----------------------------------------------------------------------------

def test_a_good_user_scenario_loads_from_a_spec_path(tmp_path):
    write(tmp_path / "scenarios" / "tiny.toml", GOOD)
    reg = fresh_registry(spec_paths=[tmp_path])
    assert reg.scenario("TinyStep").host_time.to("us").magnitude == 30


@pytest.mark.parametrize(("replace", "by", "path", "message"), [
    ('kind = "host_dispatch"', 'kind = "host_dispach"', "kind",
     "unknown scenario kind 'host_dispach'; did you mean 'host_dispatch'"),
    ('dispatch = "10 us"', 'dispatch = "10"', "inputs.dispatch", "has no unit"),
    ('dispatch = "10 us"', 'dispatch = "10 W"', "inputs.dispatch", "is not a time"),
    ('dispatch = "10 us"', 'dispatch = "-10 us"', "inputs.dispatch", "must be positive"),
    ('dispatch = "10 us"', 'dispach = "10 us"', "inputs.dispach", "did you mean 'dispatch'"),
    ('dispatch = "10 us"', "", "inputs.dispatch", "missing required input 'dispatch'"),
    ("ops_per_block = 2", 'ops_per_block = "2"', "inputs.ops_per_block", "without quotes"),
    ("ops_per_block = 2", "ops_per_block = 0", "inputs.ops_per_block", "must be an integer"),
    ("ops_per_block = 2", "ops_per_block = [2]", "inputs.ops_per_block",
     "expected a quantity string"),
    ('name = "TinyStep"', 'name = "tiny step"', "name", "is not a Python identifier"),
    ('inputs = "made_up"', 'inputs = "nowhere"', "provenance.inputs.dispatch", "names no key"),
    ('inputs = "made_up"', "", "provenance.inputs.dispatch", "no source for inputs.dispatch"),
])
def test_problems_are_reported_with_their_key_path(tmp_path, replace, by, path, message):
    assert replace in GOOD
    file = write(tmp_path / "scenarios" / "tiny.toml", GOOD.replace(replace, by))
    with pytest.raises(SpecError) as exc:
        fresh_registry(spec_paths=[tmp_path])
    lines = [p for p in exc.value.problems if str(file) in p]
    assert any(line.endswith(f"@ {file}:{path}") and message in line for line in lines), lines


def test_roofkit_check_passes_the_builtin_scenarios(capsys):
    from roofkit.cli import main

    assert main(["--no-plugins", "check", str(SPECS / "scenarios")]) == 0
    files = list((SPECS / "scenarios").glob("*.toml"))
    assert f"{len(files)} spec file(s) OK" in capsys.readouterr().out


def test_roofkit_check_reports_a_bad_scenario(tmp_path, capsys):
    from roofkit.cli import main

    file = write(tmp_path / "scenarios" / "bad.toml", GOOD.replace('"1 ms"', '"1 GB"'))
    assert main(["--no-plugins", "check", str(file)]) == 1
    assert f"@ {file.resolve()}:inputs.device_time" in capsys.readouterr().err


def test_a_loose_scenario_file_is_recognised_by_its_kind_key(tmp_path, reg, capsys):
    from roofkit.cli import main
    from roofkit.loader import read_toml
    from roofkit.spec_kinds import infer_kind

    file = write(tmp_path / "tiny.toml", GOOD)
    assert infer_kind(read_toml(file)).folder == "scenarios"
    assert main(["--no-plugins", "check", str(file)]) == 0
    assert reg.scenario(file).operations == 2
    assert isinstance(reg.spec("scenarios", file), ScenarioSpec)


# -- a plugin adds a kind and a spec dir ---------------------------------------------------

@scenario_class
class CheckpointScenario(Scenario):
    """Checkpoint writes: checkpoints * write."""

    derived_names = ("total", "share")
    _write: float = quantity_input("time", "s")
    _step: float = quantity_input("time", "ms")
    checkpoints: int = count_input(default=1)

    @property
    def total(self):
        """Time writing checkpoints, checkpoints * write, in s."""
        return Q(self.checkpoints * self.value_in("write"), "s")

    @property
    def share(self) -> float:
        """Write time over one step: write / step."""
        return self.value_in("write") * 1000 / self.value_in("step")


@attrs.frozen
class PlainKind:
    """A plugin kind that is a plain attrs class, without roofkit's Scenario base."""

    steps: int
    label: str = "x"

    @property
    def doubled(self) -> int:
        return 2 * self.steps


class CheckpointPlugin:
    def __init__(self, spec_dir: Path):
        self.spec_dir = spec_dir

    @hookimpl
    def roofkit_register_scenario_kinds(self):
        return [ScenarioKind("checkpoint", CheckpointScenario, CheckpointScenario.derived_names,
                             "checkpoint writes"),
                ScenarioKind("plain", PlainKind, ("doubled",))]

    @hookimpl
    def roofkit_register_spec_dirs(self):
        return [self.spec_dir]


@pytest.fixture
def plugin_registry(tmp_path):
    write(tmp_path / "specs" / "scenarios" / "nightly.toml", """
        kind = "checkpoint"
        name = "NightlyCheckpoints"
        description = "Four checkpoints of a training run."
        [inputs]
        write = "90 s"
        step = "450 ms"
        checkpoints = 4
        [sources]
        ops = "the team's run log"
        [provenance]
        inputs = "ops"
    """)
    write(tmp_path / "specs" / "scenarios" / "plain.toml", """
        kind = "plain"
        name = "PlainOne"
        description = "A plain attrs kind."
        [inputs]
        steps = 21
        label = "y"
        [sources]
        ops = "a test"
        [provenance]
        "inputs.steps" = "ops"
    """)
    return fresh_registry(plugins=[CheckpointPlugin(tmp_path / "specs")])


def test_a_plugin_adds_a_scenario_kind_and_scenarios_of_it(plugin_registry):
    reg = plugin_registry
    assert {"host_dispatch", "checkpoint", "plain"} <= set(reg.scenario_kinds)
    assert reg.provider("scenario_kinds", "checkpoint").startswith("CheckpointPlugin")
    s = reg.scenario("NightlyCheckpoints")
    assert s.total == Q(360, "s") and s.share == pytest.approx(200)
    assert s.variant(checkpoints=1).total == Q(90, "s")
    assert reg.scenario("PlainOne").doubled == 42
    assert reg.scenario("Gpt2XlEagerDecodeDispatch").host_time.to("us").magnitude == 8640


def test_a_plugin_kind_validates_spec_inputs_like_a_builtin(tmp_path, plugin_registry):
    write(tmp_path / "more" / "scenarios" / "bad.toml", """
        kind = "checkpoint"
        name = "BadCheckpoints"
        description = "Wrong unit."
        [inputs]
        write = "90 GB"
        step = "450 ms"
        [sources]
        ops = "a test"
        [provenance]
        inputs = "ops"
    """)
    with pytest.raises(SpecError, match=r"is not a time .*@ .*bad.toml:inputs.write"):
        fresh_registry(plugins=[CheckpointPlugin(tmp_path / "specs")],
                       spec_paths=[tmp_path / "more"])


def test_a_scenario_of_an_unregistered_kind_fails_naming_the_kinds(tmp_path):
    write(tmp_path / "scenarios" / "nightly.toml", GOOD.replace("host_dispatch", "checkpoint"))
    with pytest.raises(SpecError, match=r"unknown scenario kind 'checkpoint'.*known: "
                                        r"compile_breakeven, graph_capture, host_dispatch"):
        fresh_registry(spec_paths=[tmp_path])


def test_two_plugins_registering_one_kind_name_both(tmp_path):
    class Again:
        @hookimpl
        def roofkit_register_scenario_kinds(self):
            return [ScenarioKind("host_dispatch", HostDispatchScenario)]

    with pytest.raises(roofkit.PluginError, match=r"roofkit_builtins\.scenario_kinds"):
        fresh_registry(plugins=[Again()])
