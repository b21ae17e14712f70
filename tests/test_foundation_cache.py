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
    c = SpecCache(spec_dirs=spec_dirs, plugins=plugins)
    c.entries[("x.toml", "devices")] = ((0, 0), "spec")
    c.dirty = True
    c.save()
    return c


def test_entries_survive_when_nothing_changed(cache_dir, tmp_path):
    _saved([tmp_path / "plugin-specs"], [("myplugin", "1.0")])
    again = SpecCache(spec_dirs=[tmp_path / "plugin-specs"], plugins=[("myplugin", "1.0")])
    assert ("x.toml", "devices") in again.entries


def test_another_set_of_spec_dirs_empties_the_cache(cache_dir, tmp_path):
    _saved([tmp_path / "plugin-specs"])
    assert SpecCache(spec_dirs=[tmp_path / "other"]).entries == {}
    assert SpecCache(spec_dirs=[]).entries == {}


def test_another_plugin_distribution_empties_the_cache(cache_dir):
    _saved(plugins=[("myplugin", "1.0")])
    assert SpecCache(plugins=[("myplugin", "1.1")]).entries == {}
    assert SpecCache(plugins=[]).entries == {}


def test_a_registry_built_twice_reads_its_specs_from_the_cache(cache_dir):
    first = roofkit.build_registry(entry_points=False)
    (file,) = cache_dir.glob("specs-*.pickle")
    assert file == cache_file()
    second = roofkit.build_registry(entry_points=False)
    assert second.device("h100") == first.device("h100")
