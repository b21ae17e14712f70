import pytest

from roofkit import SpecError, units


@pytest.mark.parametrize(
    ("text", "dimension", "expected"),
    [
        ("80 GiB", "bytes", 80 * 2**30),
        ("80 GB", "bytes", 80e9),
        ("3.35 TB/s", "bandwidth", 3.35e12),
        ("989.4 TFLOP/s", "throughput", 989.4e12),
        ("1979 TOP/s", "throughput", 1979e12),
        ("700 W", "power", 700.0),
        ("10 us", "time", 10e-6),
        ("10 µs", "time", 10e-6),
        ("1450 1/s", "rate", 1450.0),
        ("512 KiB", "bytes", 512 * 1024),
        ("4.1 GMAC", "compute", 8.2e9),
        ("2048 token", "tokens", 2048.0),
    ],
)
def test_parse_gives_si_floats(text, dimension, expected):
    assert units.parse(text, dimension) == pytest.approx(expected, rel=1e-12)


def test_parse_is_exact_for_decimal_figures():
    assert units.parse("66.9 TFLOP/s", "throughput") == 66.9e12
    assert units.parse("10 us", "time") == 1e-05


@pytest.mark.parametrize(("text", "fix"), [("989 TFLOPS", "989 TFLOP/s"),
                                           ("1979 TOPS", "1979 TOP/s"),
                                           ("20 GFLOPS", "20 GFLOP/s")])
def test_flops_spelling_is_refused_with_the_right_spelling(text, fix):
    with pytest.raises(SpecError) as info:
        units.parse(text, "throughput")
    assert repr(fix) in str(info.value)


def test_bare_number_is_refused_with_an_example():
    with pytest.raises(SpecError, match="700 W"):
        units.parse(700, "power")
    with pytest.raises(SpecError, match="no unit"):
        units.parse("700", "power")


def test_bytes_flops_and_tokens_do_not_mix():
    for text, dim in [("3 TB", "bandwidth"), ("1 TFLOP", "bytes"), ("5 token", "compute"),
                      ("3 TB/s", "throughput")]:
        with pytest.raises(SpecError, match="is not a"):
            units.parse(text, dim)


def test_unknown_unit_names_it():
    with pytest.raises(SpecError, match="unknown unit 'parsecs'"):
        units.parse("5 parsecs", "time")


def test_quantities_at_the_edge_convert():
    q = units.Q(0.0125, "s")
    assert q.to("ms").magnitude == pytest.approx(12.5)
    assert units.Q(1, "GiB").to("B").magnitude == 2**30


def test_fmt_picks_a_prefix():
    assert units.fmt(3.35e12, "bandwidth") == "3.35 TB/s"
    assert units.fmt(1e-5, "time") == "10 us"
