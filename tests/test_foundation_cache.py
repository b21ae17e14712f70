"""The spec cache: one file per installation, emptied by any change to code, plugins or the
plugin spec folders."""

from pathlib import Path

import pytest

import roofkit
from roofkit import cache
from roofkit.cache import SpecCache, cache_file


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("ROOFKIT_NO_CACHE", raising=False)
    monkeypatch.setenv("ROOFKIT_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_two_installations_keep_two_cache_files(cache_dir, tmp_path):
    editable = cache_file(Path(roofkit.__file__).parent)
    wheel = cache_file(tmp_path / "site-packages" / "roofkit")
    assert editable.parent == wheel.parent == cache_dir
    assert editable != wheel
    assert cache_file() == editable  # this installation's file


def test_no_cache_turns_it_off(monkeypatch):
    monkeypatch.setenv("ROOFKIT_NO_CACHE", "1")
    assert cache_file() is None and SpecCache().path is None


def test_the_stamp_covers_the_builtins_package_files():
    import roofkit_builtins

    builtins_dir = str(Path(roofkit_builtins.__file__).resolve().parent)
    files = [f for f, _ in cache._code_stamp()[2:]]
    assert any(f.startswith(builtins_dir) for f in files)
    assert any(f.endswith("units.txt") for f in files)


def _saved(spec_dirs=(), plugins=()):
    """A cache holding one device spec (h100-sxm), saved under this stamp."""
    reg = roofkit.build_registry(entry_points=False, cache=False)
    origin = reg.devices.origin("h100-sxm")
    c = SpecCache(spec_dirs=spec_dirs, plugins=plugins)
    c.put(origin, "devices", reg.device("h100-sxm"), "h100-sxm", ())
    c.save()
    return origin


def test_entries_survive_when_nothing_changed(cache_dir, tmp_path):
    origin = _saved([tmp_path / "plugin-specs"], [("myplugin", "1.0")])
    again = SpecCache(spec_dirs=[tmp_path / "plugin-specs"], plugins=[("myplugin", "1.0")])
    hit = again.get(origin, "devices")
    assert hit is not None and hit.name == "h100-sxm"
    assert hit.build() == roofkit.build_registry(entry_points=False, cache=False).device("h100")


def test_another_set_of_spec_dirs_empties_the_cache(cache_dir, tmp_path):
    _saved([tmp_path / "plugin-specs"])
    assert SpecCache(spec_dirs=[tmp_path / "other"]).specs == {}
    assert SpecCache(spec_dirs=[]).specs == {}


def test_another_plugin_distribution_empties_the_cache(cache_dir):
    _saved(plugins=[("myplugin", "1.0")])
    assert SpecCache(plugins=[("myplugin", "1.1")]).specs == {}
    assert SpecCache(plugins=[]).specs == {}


def test_a_registry_built_twice_reads_its_specs_from_the_cache(cache_dir):
    first = roofkit.build_registry(entry_points=False)
    (file,) = cache_dir.glob("specs-*.json")
    assert file == cache_file()
    second = roofkit.build_registry(entry_points=False)
    assert second.device("h100") == first.device("h100")


calls: list[str] = []


def _counting_check(obj, tables):
    """The workload check, counting its calls (installed by the test below)."""
    from roofkit.schema.workload_check import check

    calls.append(obj.name)
    return check(obj, tables)


def test_cross_file_checks_are_kept_for_one_set_of_files_and_rerun_when_one_changes(
        cache_dir, tmp_path, monkeypatch):
    import os

    import attrs

    from roofkit.errors import SpecError
    from roofkit.spec_kinds import SPEC_KINDS
    from roofkit.testing import write_spec

    good = """
        name = "tiny-dense"
        display_name = "Tiny dense"
        domain = "language"
        template = "dense"
        [dims]
        layers = 2
        hidden = 64
        heads = 4
        kv_heads = 4
        head_dim = 16
        ffn = 128
        vocab = 100
        [sources]
        config = "https://example.org/tiny"
        [provenance]
        dims = "config"
    """
    path = write_spec(tmp_path / "user", "workloads", "tiny-dense", good)
    calls.clear()
    monkeypatch.setitem(SPEC_KINDS, "workloads", attrs.evolve(
        SPEC_KINDS["workloads"], check_path="test_foundation_cache:_counting_check"))
    first = roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "user"])
    assert "tiny-dense" in calls
    calls.clear()
    second = roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "user"])
    assert calls == []  # the same files: the kept result, no check run
    assert second.workload("tiny-dense") == first.workload("tiny-dense")
    # a missing required dim (the dense template requires `vocab`) is a cross-file problem:
    # after the edit it must be found, not read from the cache
    write_spec(tmp_path / "user", "workloads", "tiny-dense", good.replace("vocab = 100\n", ""))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with pytest.raises(SpecError, match="vocab"):
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "user"])
    assert "tiny-dense" in calls
