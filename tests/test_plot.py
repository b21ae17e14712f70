"""Pictures: valid PNG/SVG files with the expected marks (one per node, the ceilings with
their values, axis labels, the Pareto front), ``.plot()`` on every result, and a clear
message without matplotlib."""

import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

pytest.importorskip("matplotlib")  # the test extra includes it; a bare install may not

import roofkit
from roofkit import plot
from roofkit.plot import charts
from roofkit.plot.roofline import roofline
from roofkit.testing import run_cli

SVG = "{http://www.w3.org/2000/svg}"


def _svg(fig, tmp_path, name="fig.svg"):
    path = plot.save(fig, tmp_path / name)
    text = path.read_text()
    return text, ET.fromstring(text)


def _ids(root, prefix):
    return [e.get("id") for e in root.iter() if (e.get("id") or "").startswith(prefix)]


def _texts(root):
    return " ".join("".join(e.itertext()) for e in root.iter(f"{SVG}text"))


@pytest.fixture(scope="module")
def step(registry):
    return roofkit.decode("llama-3.1-8b", "h100", batch=32, context=2048, basis="datasheet",
                          registry=registry)


@pytest.fixture(scope="module")
def roofline_svg(step, registry, tmp_path_factory):
    """The datasheet roofline of the step, drawn once (as the CLI does)."""
    return _svg(roofline(step, registry=registry), tmp_path_factory.mktemp("svg"))[1]


def test_roofline_svg_has_a_mark_per_placed_node_and_the_step(step, roofline_svg):
    root = roofline_svg
    placed = {f"node-{r.node}" for r in step.rows if r.flops > 0 and r.bytes > 0}
    assert set(_ids(root, "node-")) == placed
    assert len(placed) >= 10
    assert _ids(root, "step") == ["step"]


def test_roofline_draws_each_slot_and_tier_with_its_datasheet_value(roofline_svg):
    root = roofline_svg
    texts = _texts(root)
    # H100 SXM datasheet: 989.4 TFLOP/s dense bf16/fp16, 1979 TFLOP/s fp8, 3.35 TB/s HBM3
    assert "bf16/fp16 989.4 TFLOP/s" in texts
    assert "1.979 PFLOP/s" in texts
    assert "memory (datasheet) 3.35 TB/s" in texts
    assert "arithmetic intensity (FLOP/B)" in texts and "performance (FLOP/s)" in texts
    assert "ceiling-bf16_fp16" in _ids(root, "ceiling-")
    assert "bandwidth-memory_datasheet_" in _ids(root, "bandwidth-")


def test_roofline_on_the_calibrated_basis_uses_the_measured_bandwidth(registry, tmp_path):
    from roofkit.circuit.roofline import device_roofline

    est = roofkit.decode("llama-3.1-8b", "h100", batch=32, basis="calibrated",
                         registry=registry)
    measured = device_roofline(registry.device("h100"), "calibrated", registry).bandwidth
    _, root = _svg(roofline(est, registry=registry), tmp_path)
    assert f"memory (calibrated) {roofkit.units.fmt(measured, 'bandwidth')}" in _texts(root)
    assert measured < 3.35e12


def test_png_is_a_valid_image_with_content(registry, tmp_path):
    import matplotlib.image

    fit = roofkit.fits("llama-3.1-8b", "h100", seqs=32, context=2048, registry=registry)
    path = plot.save(fit.plot(), tmp_path / "m.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(path)
    assert pixels.shape[:2] == (390, 1125)  # 7.5 x 2.6 in at 150 dpi
    assert np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0).shape[0] > 10


def test_sweep_plot_draws_the_pareto_front_point_by_point(registry, tmp_path):
    table = roofkit.sweep("llama-3.1-8b", ["h100", "b200"], ["fp8", "bf16"],
                          batch_sizes=[1, 4, 16, 64], contexts=[2048], mode="decode",
                          registry=registry)
    front = table.pareto("throughput_per_s", "itl_ms")
    _, root = _svg(charts.sweep(table, "throughput", "itl", pareto=True), tmp_path)
    group = next(e for e in root.iter() if e.get("id") == "pareto")
    assert len(list(group.iter(f"{SVG}use"))) == len(front) >= 2
    assert set(_ids(root, "group-")) == {"group-h100-sxm", "group-b200"}
    texts = _texts(root)
    assert "throughput_per_s" in texts and "itl_ms" in texts


def test_breakdown_has_a_segment_per_node_and_the_rest_summed(step, tmp_path):
    _, root = _svg(charts.breakdown(step, top=5), tmp_path)
    ids = _ids(root, "node-")
    assert len(ids) == 6 and ids[-1] == f"node-other_{len(step.rows) - 5}_"
    assert ids[0] == f"node-{step.by('node')[0].node}"


def test_serve_plot_draws_one_itl_point_per_step(registry, tmp_path):
    est = roofkit.serve("llama-3.1-8b", "h100", batch=8, input_len=128, output_len=32,
                        registry=registry)
    _, root = _svg(charts.serve(est), tmp_path)
    line = next(e for e in root.iter() if e.get("id") == "itl")
    path = next(line.iter(f"{SVG}path")).get("d")
    assert path.count("L") == len(est.itl_steps) - 1 == 30
    assert "inter-token latency (ms)" in _texts(root)


def test_every_result_plots_to_a_figure(registry, step):
    from matplotlib.figure import Figure

    from roofkit.serving import validation

    cat = registry.catalogues["validation"]
    cases = [cat[n] for n in sorted(cat) if not cat[n].superseded_by][:4]
    results = [
        roofkit.Engine.solve("llama-3.1-8b", "h100", batch_size=32, registry=registry), step,
        roofkit.fits("llama-3.1-8b", "h100", seqs=32, context=2048, registry=registry),
        roofkit.serve("llama-3.1-8b", "h100", batch=4, output_len=8, registry=registry),
        validation.run(registry=registry, cases=cases),
        roofkit.sweep("llama-3.1-8b", ["h100"], ["fp8"], batch_sizes=[1, 8], mode="decode",
                      registry=registry),
    ]
    for r in results:
        assert isinstance(r.plot(), Figure), type(r).__name__
    assert isinstance(step.plot("roofline", registry=registry), Figure)
    with pytest.raises(roofkit.RoofkitError, match="drawn as breakdown, roofline"):
        step.plot("serve")


def test_cli_writes_the_picture_and_names_it(capsys, tmp_path):
    out_file = tmp_path / "r.svg"
    code, out, _ = run_cli(capsys, "plot", "roofline", "llama-3.1-8b", "h100-sxm", "-b", "32",
                           "--basis", "datasheet", "-o", str(out_file))
    assert code == 0 and f"wrote {out_file}" in out
    assert "node-ffn.down" in out_file.read_text()


def test_cli_refuses_an_unknown_image_format(capsys, tmp_path):
    code, _, err = run_cli(capsys, "plot", "serve", "llama-3.1-8b", "h100-sxm", "-o",
                           str(tmp_path / "x.jpg"))
    assert code == 1 and ".png, .svg or .pdf" in err


def test_without_matplotlib_plot_says_how_to_install_it(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails
    code, _, err = run_cli(capsys, "plot", "roofline", "llama-3.1-8b", "h100-sxm", "-o",
                           str(tmp_path / "r.png"))
    assert code == 1
    assert "pip install 'roofkit[plot]'" in err
    assert not (tmp_path / "r.png").exists()
