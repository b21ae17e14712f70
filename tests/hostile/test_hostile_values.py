"""Hostile numbers: every numeric field of every spec kind declares a range, and the loader
accepts exactly the values inside it (NaN, infinity, negative, zero and huge included)."""

from __future__ import annotations

import math
import re
import typing
from decimal import Decimal
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofkit.errors import SpecError
from roofkit.loader import make_converter
from roofkit.scenarios.base import convert_inputs, input_fields
from roofkit.schema.fields import Range, meta_of, range_of
from roofkit.spec_kinds import SPEC_KINDS

SI_UNIT = {"time": "s", "bytes": "B", "bandwidth": "B/s", "compute": "FLOP",
           "throughput": "FLOP/s", "power": "W", "energy": "J", "rate": "1/s", "tokens": "token"}
NUMERIC = (int, float)


def _args(t):
    return [a for a in typing.get_args(t) if a is not type(None)]


def _classes(t):
    """The attrs classes a field type holds: T, T | None, tuple[T, ...], dict[str, T]."""
    if isinstance(t, type) and attrs.has(t):
        return [t]
    out = []
    for a in typing.get_args(t):
        out += _classes(a)
    return out


def _numeric(t) -> bool:
    """int, float, their Optional, or a table of them."""
    if t in NUMERIC:
        return True
    if typing.get_origin(t) is dict:
        return typing.get_args(t)[1] in NUMERIC
    args = _args(t)
    return len(args) == 1 and args[0] in NUMERIC and t is not args[0]


def spec_classes() -> list[type]:
    seen: list[type] = []

    def walk(cls):
        if cls in seen:
            return
        seen.append(cls)
        attrs.resolve_types(cls)
        for f in attrs.fields(cls):
            for sub in _classes(f.type):
                walk(sub)

    for kind in SPEC_KINDS.values():
        walk(kind.cls)
    return seen


def numeric_fields() -> list[tuple[type, attrs.Attribute]]:
    return [(cls, f) for cls in spec_classes() for f in attrs.fields(cls) if _numeric(f.type)]


FIELDS = numeric_fields()
FIELD_IDS = [f"{cls.__name__}.{f.name}" for cls, f in FIELDS]


def test_the_walk_finds_the_spec_classes():
    names = {c.__name__ for c in spec_classes()}
    assert {"Device", "Memory", "Overheads", "Workload", "Generic", "Calibration",
            "AllReduceMeasurement", "StepTable", "ValidationCase", "CaseConfig", "OpRule",
            "CircuitTemplate", "ScenarioSpec"} <= names
    assert len(FIELDS) > 40


@pytest.mark.parametrize(("cls", "field"), FIELDS, ids=FIELD_IDS)
def test_every_numeric_field_declares_a_range(cls, field):
    assert isinstance(range_of(field), Range), (
        f"{cls.__name__}.{field.name} is numeric but declares no range; declare it with "
        "roofkit.schema.fields (quantity, number, count, fraction, quantities, numbers)")


def test_every_scenario_input_declares_a_range(registry):
    for kind in registry.scenario_kinds.values():
        for name, field in input_fields(kind.cls).items():
            meta = field.metadata.get("roofkit") or {}
            if "dimension" in meta or meta.get("count"):
                assert isinstance(meta.get("range"), Range), f"{kind.name}.{name}"


# -- structuring one class with one hostile value --------------------------------------

def _valid(field: attrs.Attribute):
    """A value the loader accepts for ``field`` (a required one: the test's scaffolding)."""
    meta = meta_of(field) or {}
    t = field.type
    if "dimension" in meta:
        one = f"{_inside(meta['range'])!r} {SI_UNIT[meta['dimension']]}"
        return {"k": one} if meta.get("mapping") else one
    if "range" in meta:
        return [_inside(meta["range"])] if meta.get("sequence") else _inside(meta["range"])
    if t is str:
        return "x"
    if typing.get_origin(t) is typing.Literal:
        return typing.get_args(t)[0]
    if typing.get_origin(t) in (dict, tuple):
        return {} if typing.get_origin(t) is dict else []
    if attrs.has(t):
        return minimal(t)
    return None


def _inside(r: Range):
    v = r.low + 1 if r.integer else (r.low + r.high) / 2
    return int(v) if r.integer else v


def minimal(cls) -> dict:
    """The required keys of ``cls``, each with an accepted value."""
    attrs.resolve_types(cls)
    return {f.name: _valid(f) for f in attrs.fields(cls)
            if f.default is attrs.NOTHING and f.init}


CONVERTER = make_converter()


def _accepted(cls, field, raw) -> bool:
    data = minimal(cls)
    meta = meta_of(field) or {}
    key = "k"
    if meta.get("keys") and meta.get("closed"):
        key = meta["keys"][0]
    data[field.name] = {key: raw} if meta.get("mapping") else [raw] if meta.get("sequence") \
        else raw
    try:
        CONVERTER.structure(data, cls)
    except Exception as exc:  # cattrs' validation group
        text = repr(exc)
        assert "Traceback" not in text
        return False
    return True


#: the values every field is tried at: NaN, infinities, zero, negative, fractional, huge
EDGES = [math.nan, math.inf, -math.inf, 0.0, -0.0, -1.0, 1e300, 1e16, 1e-300, 0.5, 1.0, 1.5,
         0, -1, 1, 2, 10**7, 10**15, 10**18, 2**63, 10**4000]
hostile = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers())


def _expected_number(r: Range, raw) -> bool:
    if r.integer:
        return isinstance(raw, int) and not isinstance(raw, bool) and r.contains(raw)
    try:
        value = float(raw)
    except OverflowError:
        return False
    return abs(raw) <= 1e300 and r.contains(value) if isinstance(raw, int) else r.contains(value)


def _check_value(cls, field, raw):
    meta = meta_of(field)
    r = range_of(field)
    if "dimension" not in meta:
        assert _accepted(cls, field, raw) is _expected_number(r, raw), raw
        return
    if isinstance(raw, float) and not math.isfinite(raw):
        text = f"{raw} {SI_UNIT[meta['dimension']]}"  # 'nan s', 'inf B'
        expected = False
    else:
        number = repr(float(raw)) if isinstance(raw, float) else str(raw)
        if len(number) > 400:
            number = "1e400"
        text = f"{number} {SI_UNIT[meta['dimension']]}"
        value = float(Decimal(number))
        expected = math.isfinite(value) and r.contains(value)
    assert _accepted(cls, field, text) is expected, text
    assert _accepted(cls, field, raw) is False  # a bare number has no unit


@pytest.mark.parametrize(("cls", "field"), FIELDS, ids=FIELD_IDS)
def test_edge_values_are_accepted_exactly_when_in_range(cls, field):
    for raw in EDGES:
        _check_value(cls, field, raw)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(where=st.sampled_from(FIELDS), raw=hostile)
def test_any_number_is_accepted_exactly_when_in_range(where, raw):
    _check_value(*where, raw)


# -- whole files: the cases of the issue ------------------------------------------------

def _load(registry, tmp_path, kind, source, edit):
    """``roofkit check`` of ``source`` edited by ``edit``: its problems."""
    from roofkit.catalogue import check_paths

    text = source.read_text()
    new = edit(text)
    assert new != text
    folder = tmp_path / kind
    folder.mkdir()
    (folder / source.name).write_text(_overriding(new))
    tables = {**registry._tables, **registry.catalogues}
    return check_paths([str(tmp_path)], registry.converter, tables, registry.spec_layers)[1]


SPECS = Path(__file__).parents[2] / "specs"


def _overriding(text: str) -> str:
    """``text`` replacing the shipped spec of its name (``overrides``), so checking it beside
    the catalogue reports its own problems, not the collision."""
    if re.search(r"^overrides\s*=", text, re.M):
        return text  # it says so already
    name = re.search(r'^name = "([^"]+)"', text, re.M).group(1)
    return f'overrides = "{name}"\n' + text


@pytest.mark.parametrize(("kind", "file", "line", "new", "key"), [
    ("devices", "h100-sxm.toml", "capacity", 'capacity = "-80 GB"', "memory.capacity"),
    ("devices", "h100-sxm.toml", "capacity", 'capacity = "0 GB"', "memory.capacity"),
    ("devices", "h100-sxm.toml", "bandwidth", 'bandwidth = "0 TB/s"', "memory.bandwidth"),
    ("devices", "h100-sxm.toml", "usable_fraction", "usable_fraction = nan",
     "memory.usable_fraction"),
    ("devices", "h100-sxm.toml", "usable_fraction", "usable_fraction = inf",
     "memory.usable_fraction"),
    ("devices", "h100-sxm.toml", "dispatch", 'dispatch = "10 Ms"', "overheads.dispatch"),
    ("validation", "amd_mi300x_llama31_70b_fp8_tp8_bs1_128_2048.toml", "value",
     "value = nan", "value"),
    ("validation", "amd_mi300x_llama31_70b_fp8_tp8_bs1_128_2048.toml", "value",
     "value = -17236.0", "value"),
    ("workloads", "llama-3.1-8b.toml", "layers", "layers = 10000000", "dims.layers"),
    ("workloads", "llama-3.1-8b.toml", "layers", "layers = 1e15", "dims.layers"),
    ("workloads", "llama-3.1-8b.toml", "layers", "layers = " + "9" * 4000, "dims.layers"),
    ("workloads", "llama-3.1-8b.toml", "hidden", "hidden = inf", "dims.hidden"),
])
def test_impossible_numbers_in_files_are_refused_with_file_key_and_range(
        registry, tmp_path, kind, file, line, new, key):
    source = SPECS / kind / file
    pattern = re.compile(rf"^{line} = .*$", re.M)
    problems = _load(registry, tmp_path, kind, source, lambda t: pattern.sub(new, t, count=1))
    hits = [p for p in problems if p.key == key]
    assert hits, [str(p) for p in problems]
    assert "allowed:" in hits[0].message or "must be in" in hits[0].message, hits[0].message
    assert hits[0].file.endswith(file)


def test_a_calibration_bus_bandwidth_must_be_positive(registry, tmp_path):
    source = SPECS / "calibration" / "h100-sxm.toml"
    old = 'bus_bandwidth = { "1024" = "'
    problems = _load(registry, tmp_path, "calibration", source,
                     lambda t: t.replace(old, old + "-", 1))
    assert any(p.key.startswith("allreduce.") and p.key.endswith(".1024")
               and "positive" in p.message for p in problems), [str(p) for p in problems]


def test_scenario_count_inputs_are_bounded(registry):
    kind = registry.scenario_kinds["host_dispatch"]
    _, problems = convert_inputs(kind.cls, {"blocks": 10**40})
    assert problems and "must be in [1, 1000000000000]" in problems[0][1]
    with pytest.raises(SpecError, match=r"dispatch: must be in \(0 s, 1 s\].*'10 ms'"):
        kind.cls(ops_per_block=1, dispatch="10 Ms", launch="1 us", device_time="1 us")


def test_an_integer_past_the_conversion_limit_is_a_located_error(registry, tmp_path):
    source = SPECS / "workloads" / "llama-3.1-8b.toml"
    pattern = re.compile(r"^layers = .*$", re.M)
    problems = _load(registry, tmp_path, "workloads", source,
                     lambda t: pattern.sub("layers = " + "9" * 5000, t, count=1))
    assert len(problems) == 1 and problems[0].file.endswith(source.name)
    assert "has 5000 digits" in problems[0].message and "at line" in problems[0].message
