"""Cluster specs: the catalogue, ad hoc NxDEVICE clusters, bad specs, the CLI."""

import json

import pytest

from roofkit import SpecError, build_registry
from roofkit.cli import main
from roofkit.fleet.cluster import with_devices

CATALOGUE = ("dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72", "mi300x-8", "tpu-v5p-pod",
             "tpu-v4-pod", "gaudi3-8", "trn2-48xlarge")


def test_catalogue_holds_every_published_cluster(registry):
    assert set(CATALOGUE) <= set(registry.clusters)
    for name in CATALOGUE:
        c = registry.cluster(name)
        assert c.device in registry.devices
        assert c.sources and c.provenance


def test_dgx_h100_has_one_400_gbps_nic_per_gpu(registry):
    c = registry.cluster("dgx-h100")
    assert c.scale_up.bandwidth == pytest.approx(900e9 / 2)  # 900 GB/s bidirectional
    assert c.scale_out.bandwidth == pytest.approx(400e9 / 8)  # 400 Gb/s in bytes
    assert c.node_power == pytest.approx(10.2e3)


def test_nvl72_scale_up_domain_spans_trays(registry):
    c = registry.cluster("gb200-nvl72")
    assert (c.devices_per_node, c.nodes, c.scale_up.size) == (4, 18, 72)


def test_ad_hoc_cluster_from_the_device_interconnect(registry):
    c = registry.cluster("64xh100")
    assert (c.device, c.devices_per_node, c.nodes) == ("h100-sxm", 8, 8)
    assert c.scale_up.bandwidth == registry.device("h100").interconnect.bandwidth
    assert c.scale_out.bandwidth == pytest.approx(50e9)


def test_ad_hoc_cluster_must_fill_whole_nodes(registry):
    with pytest.raises(SpecError, match="whole nodes"):
        registry.cluster("12xh100")


def test_ad_hoc_cluster_needs_an_interconnect(registry):
    with pytest.raises(SpecError, match="interconnect"):
        registry.cluster("4xrtx-4090")


def test_one_device_without_an_interconnect_is_a_cluster_of_one(registry):
    c = registry.cluster("1xrtx-4090")
    assert (c.devices, c.scale_up.size, c.scale_out) == (1, 1, None)


def test_training_takes_a_device_as_its_ad_hoc_cluster(registry):
    from roofkit import UnknownNameError
    from roofkit.fleet.training import train

    # single-device fine-tuning: the device name alone is one device of it
    one = train("llama-3.2-1b", "rtx-4090", global_batch=8, seq_len=2048, lora=16,
                registry=registry)
    assert one.cluster == "1xrtx-4090" and one.layout.devices == 1
    assert sum(one.breakdown[k] for k in ("tp", "cp", "ep", "pp", "dp")) == 0.0
    # a device with --devices N: the NxDEVICE cluster, the same as naming it
    by_device = train("llama-3.1-8b", "h100", devices=16, tp=8, global_batch=16,
                      seq_len=4096, registry=registry)
    named = train("llama-3.1-8b", "16xh100", devices=16, tp=8, global_batch=16, seq_len=4096,
                  registry=registry)
    assert by_device.cluster == "16xh100-sxm"
    assert by_device.step_time_s == named.step_time_s
    with pytest.raises(SpecError, match="interconnect"):
        train("llama-3.1-8b", "rtx-4090", devices=2, seq_len=2048, registry=registry)
    with pytest.raises(UnknownNameError, match="Unknown cluster 'h10'"):
        train("llama-3.1-8b", "h10", seq_len=2048, registry=registry)


def test_cluster_cut_to_a_device_count(registry):
    c = with_devices(registry.cluster("dgx-h100"), 1024)
    assert (c.nodes, c.devices) == (128, 1024)
    with pytest.raises(SpecError, match="whole nodes"):
        with_devices(c, 100)


def test_a_cluster_without_a_source_is_refused(tmp_path):
    d = tmp_path / "clusters"
    d.mkdir()
    (d / "bad.toml").write_text('''name = "bad"
display_name = "Bad"
device = "h100-sxm"
devices_per_node = 8
nodes = 2
[scale_up]
size = 8
bandwidth = "450 GB/s"
latency = "2 us"
[sources]
[provenance]
''')
    with pytest.raises(SpecError) as err:
        build_registry(entry_points=False, spec_paths=[tmp_path], cache=False)
    text = str(err.value)
    assert "bad.toml" in text and "scale_out" in text and "no source for nodes" in text


def test_cli_lists_and_shows_clusters(capsys):
    assert main(["clusters", "--json", "--no-plugins"]) == 0
    names = {c["name"] for c in json.loads(capsys.readouterr().out)}
    assert set(CATALOGUE) <= names
    assert main(["show", "dgx-b200", "--json", "--no-plugins"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["scale_out"]["bandwidth_bytes_per_s"] == pytest.approx(50e9)
    assert main(["show", "16xh100", "--no-plugins"]) == 0
    assert "8 per node x 2 nodes" in capsys.readouterr().out
