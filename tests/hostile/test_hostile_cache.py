"""Caches never hand back another file's spec: a spec given by path is keyed by its real path
and its bytes, not by the path as typed. Every case runs under a deadline."""

from __future__ import annotations

import os
import textwrap

import pytest
from deadline import deadline

import roofkit
from roofkit import Engine

WORKLOAD = """
    name = "tiny-{tag}"
    display_name = "Tiny {tag}"
    domain = "language"
    template = "dense"
    [dims]
    layers = {layers}
    hidden = 64
    heads = 4
    kv_heads = 4
    head_dim = 16
    ffn = 128
    vocab = 100
    tie_embeddings = 0
    [sources]
    config = "https://example.org/tiny"
    [provenance]
    dims = "config"
"""


def _write(path, tag, layers):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(WORKLOAD.format(tag=tag, layers=layers)).lstrip())
    return path


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFKIT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def reg():
    return roofkit.build_registry(entry_points=False)


def test_the_same_relative_path_in_another_folder_is_another_model(tmp_path, monkeypatch, reg):
    a = _write(tmp_path / "a" / "m.toml", "a", 2)
    b = _write(tmp_path / "b" / "m.toml", "b", 6)  # three times the layers
    with deadline(30):
        monkeypatch.chdir(a.parent)
        first = roofkit.decode("m.toml", "h100", registry=reg)
        solve_a = Engine.solve("m.toml", "h100")
        monkeypatch.chdir(b.parent)
        second = roofkit.decode("m.toml", "h100", registry=reg)
        solve_b = Engine.solve("m.toml", "h100")
        footprint_b = roofkit.footprint("m.toml", registry=reg)
    assert second.workload == "tiny-b" and first.workload == "tiny-a"
    assert second.time > first.time
    assert roofkit.decode(str(b), "h100", registry=reg).time == second.time
    assert solve_b.to_dict()["latency_ms"] > solve_a.to_dict()["latency_ms"]
    assert footprint_b.weights == roofkit.footprint(str(b), registry=reg).weights


def test_two_names_differing_in_case_are_two_files_where_the_fs_says_so(tmp_path, reg):
    upper = _write(tmp_path / "Model.toml", "upper", 2)
    lower = tmp_path / "model.toml"
    if lower.exists():  # a case-insensitive file system: one file under both names
        assert os.path.samefile(upper, lower)
        pytest.skip("case-insensitive file system")
    _write(lower, "lower", 6)
    with deadline(30):
        a = roofkit.decode(str(upper), "h100", registry=reg)
        b = roofkit.decode(str(lower), "h100", registry=reg)
    assert (a.workload, b.workload) == ("tiny-upper", "tiny-lower")


def test_an_edit_that_keeps_size_and_mtime_is_seen(tmp_path, reg):
    path = _write(tmp_path / "m.toml", "x", 2)
    st = path.stat()
    with deadline(30):
        before = roofkit.decode(str(path), "h100", registry=reg)
        _write(path, "x", 6)  # same length: 2 -> 6
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # as `cp -p` or `rsync -t`
        assert path.stat().st_size == st.st_size
        after = roofkit.decode(str(path), "h100", registry=reg)
    assert after.time > before.time
