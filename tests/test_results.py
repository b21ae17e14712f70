"""One result convention: every result object gives its headline figures as pint
Quantities (``result.q``), ``to_dict()`` with the same values as plain floats under
unit-suffixed keys, ``to_pandas()``, a short ``repr``, a small ``_repr_html_`` table, and its
basis and plugin set."""

import json
from html.parser import HTMLParser

import numpy as np
import pytest

import roofkit
from roofkit.results import Result, sig
from roofkit.serving import validation


def _cases(registry):
    cat = registry.catalogues["validation"]
    names = [n for n in sorted(cat) if not cat[n].superseded_by][:3]
    return [cat[n] for n in names]


RESULTS = {
    "engine profile": lambda r: roofkit.Engine.solve("llama-3.1-8b", "h100", batch_size=32,
                                                     registry=r),
    "decode": lambda r: roofkit.decode("llama-3.1-8b", "h100", batch=32, context=2048,
                                       registry=r),
    "prefill": lambda r: roofkit.prefill("llama-3.1-8b", "h100", tokens=1024, registry=r),
    "fit": lambda r: roofkit.fits("llama-3.1-8b", "h100", seqs=32, context=2048, registry=r),
    "footprint": lambda r: roofkit.footprint("llama-3.1-8b", "h100", registry=r),
    "serve": lambda r: roofkit.serve("llama-3.1-8b", "h100", batch=32, input_len=128,
                                     output_len=16, registry=r),
    "validation report": lambda r: validation.run(registry=r, cases=_cases(r)),
}


@pytest.fixture(scope="module", params=sorted(RESULTS))
def result(request, registry):
    return RESULTS[request.param](registry)


def _find(d, key):
    """The plain value under ``key`` nearest the top of a nested dict (the JSON document;
    an ``intervals`` table names the same keys one level down, with ``lo`` and ``hi``)."""
    level = [d]
    while level:
        for x in level:
            if isinstance(x, dict) and key in x and not isinstance(x[key], dict):
                return x[key]
        level = [v for x in level if isinstance(x, dict) for v in x.values()]
    return None


def test_every_result_adopts_the_convention(result):
    assert isinstance(result, Result)
    assert result.HEADLINE, "a result declares its headline figures"


def test_headline_quantities_match_the_plain_values_in_to_dict(result):
    d = json.loads(json.dumps(result.to_dict(), default=float))
    for h in type(result).HEADLINE:
        plain = h.value(result)
        q = getattr(result.q, h.name)
        if plain is None:
            assert q is None
            continue
        assert q.to(h.unit or "dimensionless").magnitude == pytest.approx(float(plain))
        assert _find(d, h.key) == pytest.approx(float(plain)), h.key


def test_an_unknown_headline_names_the_known_ones(result):
    with pytest.raises(AttributeError, match="its headlines"):
        result.q.no_such_figure  # noqa: B018


def test_repr_is_short_and_names_basis_and_plugins(result):
    text = repr(result)
    lines = text.splitlines()
    assert 3 <= len(lines) < 15
    assert "basis" in text and "plugins" in text
    assert result.basis and result.plugins


class _Cells(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


def test_repr_html_is_a_small_table(result):
    text = result._repr_html_()
    parser = _Cells()
    parser.feed(text)
    assert parser.tags[0] == "table"
    assert parser.tags.count("tr") == len(type(result).HEADLINE) + 2  # + basis, plugins
    assert len(text) < 4000


def test_to_pandas_gives_a_frame_with_the_headline_or_the_rows(result):
    frame = result.to_pandas()
    assert len(frame) >= 1
    if len(frame) == 1:
        for h in type(result).HEADLINE:
            assert h.key in frame.columns
    assert frame.attrs["plugins"] == list(result.plugins)


def test_decode_frame_has_a_row_per_node_summing_to_the_step(registry):
    est = roofkit.decode("llama-3.1-8b", "h100", batch=32, context=2048, registry=registry)
    frame = est.to_pandas()
    assert len(frame) == len(est.rows)
    assert frame["time_s"].sum() == pytest.approx(est.time)


def test_sweep_table_follows_the_convention(registry):
    table = roofkit.sweep("llama-3.1-8b", ["h100", "b200"], ["fp8"], batch_sizes=[1, 8, 64],
                          contexts=[2048], mode="decode", basis="datasheet", registry=registry)
    assert isinstance(table, Result)
    q = table.q.itl
    assert np.allclose(q.to("s").magnitude, table["itl_ms"] / 1e3)
    assert len(repr(table).splitlines()) < 15
    assert table._repr_html_().count("<tr>") == 1 + len(table)  # header + 6 rows
    assert table.basis == "datasheet" and table.plugins == registry.plugin_set
    assert len(table.to_pandas()) == 6


@pytest.mark.parametrize(("value", "text"), [
    (3.14159, "3.142"), (0.0123456, "0.01235"), (1234.6, "1235"), (123456.7, "123,457"),
    (20.0, "20"), (0.5, "0.5"), (None, "-"), (float("inf"), "inf"), (0, "0"),
    (np.array([1.0, 2.5]), "1 .. 2.5"),
])
def test_sig_gives_significant_digits_not_mixed_decimals(value, text):
    assert sig(value) == text


@pytest.fixture(scope="module", params=["training", "load"])
def later_result(request, registry):
    """Result types of the cluster and load layers, adopting the same convention."""
    if request.param == "training":
        return roofkit.train("llama-3.1-8b", "8xh100", tp=1, dp=8, registry=registry)
    return roofkit.simulate("llama-3.1-8b", "h100", requests=12, concurrency=4,
                            input_len=128, output_len=16, registry=registry)


def test_training_and_load_results_follow_the_convention(later_result):
    assert isinstance(later_result, Result)
    d = json.loads(json.dumps(later_result.to_dict(), default=float))
    for h in type(later_result).HEADLINE:
        plain = h.value(later_result)
        if plain is None:
            continue
        q = getattr(later_result.q, h.name)
        assert q.to(h.unit or "dimensionless").magnitude == pytest.approx(float(plain))
        assert _find(d, h.key) == pytest.approx(float(plain)), h.key
    parser = _Cells()
    text = later_result._repr_html_()  # these layers draw their own small table
    parser.feed(text)
    assert "table" in parser.tags and len(text) < 6000
    assert later_result.plugins and later_result.basis
    assert len(later_result.to_pandas()) >= 1


def _small_plan(r):
    return roofkit.plan("llama-3.2-1b", ["h100"], input_len=64, output_len=16,
                        slo="ttft_p90=2s", verify=1, max_devices=2, registry=r)


def _small_search(r):
    from roofkit.fleet.search import search_layouts

    return search_layouts("llama-3.2-1b", "8xh100", global_batch=16, seq_len=1024, top=2,
                          registry=r)


def _fleet_serve(r):
    from roofkit.fleet.serving import serve_fleet

    return serve_fleet("llama-3.1-8b", "8xh100", tp=2, pp=2, registry=r)


def _load_report(r):
    from roofkit.load import validation as load_validation

    cases = [r.catalogues["load_cases"][k] for k in sorted(r.catalogues["load_cases"])[:2]]
    return load_validation.run(registry=r, cases=cases, loso=False)


def _training_report(r):
    from roofkit.fleet import validation as training_validation

    cat = r.catalogues["training"]
    return training_validation.run(registry=r, cases=[cat[k] for k in sorted(cat)[:2]])


NOTEBOOK = {"plan": _small_plan, "layout search": _small_search, "fleet serve": _fleet_serve,
            "load report": _load_report, "training report": _training_report}


@pytest.mark.parametrize("kind", sorted(NOTEBOOK))
def test_every_other_result_renders_as_a_small_table_and_a_frame(registry, kind):
    result = NOTEBOOK[kind](registry)
    text = result._repr_html_()
    parser = _Cells()
    parser.feed(text)
    assert "table" in parser.tags and "tr" in parser.tags and len(text) < 6000
    assert len(result.to_pandas()) >= 1
    shown = repr(result)
    assert len(shown.splitlines()) < 15 and len(shown) < 1500


def test_the_subpackages_the_readme_names_work_after_a_plain_import():
    # roofkit.serving.validate() and roofkit.fleet.validation.run() in the README's table:
    # in a fresh interpreter `import roofkit` alone must reach them
    import subprocess
    import sys

    code = ("import roofkit; roofkit.serving.validate; roofkit.fleet.validation.run; "
            "roofkit.load.validation.run\n"
            "try:\n    roofkit.no_such_thing\nexcept AttributeError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert "no attribute 'no_such_thing'" in out.stdout
