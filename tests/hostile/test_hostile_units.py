"""Hostile unit strings: typos that would change a value are refused, saying what was read
and what was probably meant; a bandwidth written in bits is converted and shown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofkit import units
from roofkit.errors import SpecError
from roofkit.testing import run_cli

SPECS = Path(__file__).parents[2] / "specs"


@pytest.mark.parametrize(("text", "dimension", "read", "meant"), [
    ("3350 mB/s", "bandwidth", "milli-bytes", "3350 MB/s"),
    ("80 mB", "bytes", "milli-bytes", "80 MB"),
    ("80 uB", "bytes", "micro-bytes", None),
    ("80 µB", "bytes", "micro-bytes", None),
    ("80 nB", "bytes", "nano-bytes", None),
    ("8 mb/s", "bandwidth", "milli-bits", "8 Mb/s"),
    ("80 GB %", "bytes", "stray '%'", "80 GB"),
    ("80 GB GB", "bytes", "stray 'GB'", "80 GB"),
    ("3.35 TB/s fast", "bandwidth", "stray 'fast'", "3.35 TB/s"),
    ("80 GB, 3.35 TB/s", "bytes", "stray", "80 GB"),
    ("90 %", "bytes", "stray '%'", None),
])
def test_unit_typos_are_refused_saying_what_was_read_and_meant(text, dimension, read, meant):
    with pytest.raises(SpecError) as info:
        units.parse(text, dimension)
    message = str(info.value)
    assert read in message, message
    if meant:
        assert f"did you mean {meant!r}" in message, message


@settings(max_examples=40, deadline=None)
@given(number=st.floats(min_value=1e-3, max_value=1e6, allow_nan=False),
       prefix=st.sampled_from(["m", "u", "µ", "n", "p", "f", "a", "c", "d"]),
       unit=st.sampled_from(["B", "b", "byte", "bit"]),
       per=st.sampled_from(["", "/s"]))
def test_a_fraction_of_a_byte_or_bit_is_never_read(number, prefix, unit, per):
    text = f"{number!r} {prefix}{unit}{per}"
    dimension = "bandwidth" if per else "bytes"
    try:
        value = units.parse(text, dimension)
    except SpecError as exc:
        assert "fraction of a" in str(exc) or "unknown unit" in str(exc), str(exc)
    else:  # only a spelling pint reads as something else entirely may parse: never smaller
        assert value >= number / 8, (text, value)


@settings(max_examples=40, deadline=None)
@given(junk=st.text(alphabet="%$#@!,;:=+&|~?'\"[]{}", min_size=1, max_size=3))
def test_a_stray_symbol_after_a_unit_is_refused(junk):
    with pytest.raises(SpecError, match="stray"):
        units.parse(f"80 GB {junk}", "bytes")


@pytest.mark.parametrize(("text", "si"), [("1.6 Tb/s", 2e11), ("400 Gb/s", 5e10),
                                          ("200 Gbit/s", 2.5e10), ("3.35 TB/s", 3.35e12)])
def test_bandwidths_in_bits_are_converted(text, si):
    assert units.parse(text, "bandwidth") == pytest.approx(si, rel=1e-12)


def test_a_bits_note_shows_the_converted_value():
    assert units.bits_note("400 Gb/s", "bandwidth") == \
        "'400 Gb/s' is read as 50 GB/s (8 bits to a byte)"
    assert units.bits_note("3.35 TB/s", "bandwidth") is None


def _device(tmp_path, edit) -> Path:
    text = (SPECS / "devices" / "h100-sxm.toml").read_text()
    text = re.sub(r"^name = .*$", 'name = "hostile-h100"', text, count=1, flags=re.M)
    text = re.sub(r"^aliases = .*$", "aliases = []", text, count=1, flags=re.M)
    text = re.sub(r"^symbol = .*$", 'symbol = "HostileH100"', text, count=1, flags=re.M)
    new = edit(text)
    assert new != text
    path = tmp_path / "devices" / "hostile-h100.toml"
    path.parent.mkdir(parents=True)
    path.write_text(new)
    return path


def _interconnect(value):
    def edit(text):
        head, tail = text.split("[interconnect]", 1)
        return head + "[interconnect]" + re.sub(r"^bandwidth = .*$", f'bandwidth = "{value}"',
                                                tail, count=1, flags=re.M)
    return edit


def test_check_shows_a_bandwidth_written_in_bits_converted(capsys, tmp_path):
    path = _device(tmp_path, _interconnect("3.6 Tb/s"))
    code, out, err = run_cli(capsys, "check", str(path), plugins=False)
    assert code == 0, err
    assert "'3.6 Tb/s' is read as 450 GB/s" in out and "interconnect.bandwidth" in out


def test_show_shows_a_bandwidth_written_in_bits_converted(capsys, tmp_path):
    path = _device(tmp_path, _interconnect("3.6 Tb/s"))
    code, out, err = run_cli(capsys, "show", str(path), plugins=False)
    assert code == 0, err
    assert "450 GB/s" in out and "'3.6 Tb/s' is read as 450 GB/s" in out


@pytest.mark.parametrize(("table", "key", "value", "meant"), [
    ("overheads", "dispatch", "10 Ms", "10 ms"),
    ("interconnect", "latency", "2 Ms", "2 ms"),
    ("memory", "capacity", "80 PB", None),
])
def test_a_prefix_that_puts_a_value_out_of_range_is_refused_with_the_likely_one(
        capsys, tmp_path, table, key, value, meant):
    def edit(text):
        head, tail = text.split(f"[{table}]", 1)
        return head + f"[{table}]" + re.sub(rf"^{key} = .*$", f'{key} = "{value}"', tail,
                                             count=1, flags=re.M)
    path = _device(tmp_path, edit)
    code, _, err = run_cli(capsys, "check", str(path), plugins=False)
    assert code == 1
    line = next(x for x in err.splitlines() if x.endswith(f":{table}.{key}"))
    assert f"got {value!r} (read as" in line and "must be in" in line, line
    if meant:
        assert f"did you mean {meant!r}" in line, line
