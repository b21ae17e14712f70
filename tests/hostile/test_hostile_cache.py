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
def reg(registry):
    return registry  # the session's builtin registry (path specs are memoized on it)


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


# -- the spec cache file -------------------------------------------------------------------

import hashlib  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402

from roofkit.cache import CacheWarning, SpecCache, cache_file  # noqa: E402
from roofkit.catalogue import load_layers  # noqa: E402
from roofkit.loader import make_converter  # noqa: E402
from roofkit.paths import builtin_specs_dir  # noqa: E402

H100_BW = 3.35e12  # specs/devices/h100-sxm.toml: bandwidth = "3.35 TB/s"


@pytest.fixture
def specs(tmp_path):
    """A spec folder holding a copy of the shipped h100-sxm: loading it is quick."""
    folder = tmp_path / "specs"
    (folder / "devices").mkdir(parents=True)
    shutil.copy(builtin_specs_dir() / "devices" / "h100-sxm.toml", folder / "devices")
    return folder


def _load(*folders):
    """Load ``folders`` as layers through the spec cache, then save it: the catalogues."""
    cache = SpecCache()
    with deadline(30):
        cats, problems = load_layers([("user", f) for f in folders], make_converter(), cache,
                                     {})
    assert problems == []
    cache.save()
    return cats


def _bandwidth(folder):
    return _load(folder)["devices"]["h100"].memory.bandwidth


def _cache_text():
    return cache_file().read_bytes()


def test_the_cache_is_plain_json_with_a_checksummed_header(specs):
    _load(specs)
    head, _, body = _cache_text().partition(b"\n")
    assert head.startswith(b"roofkit-spec-cache ")
    assert head.split()[-1].decode() == hashlib.sha256(body).hexdigest()
    assert isinstance(json.loads(body)["specs"], dict)


def test_a_planted_pickle_never_runs(tmp_path, specs):
    import pickle

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = cache_file()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps((("stamp",), {"x": Payload()})))
    assert _bandwidth(specs) == H100_BW
    assert not marker.exists()
    assert _cache_text().startswith(b"roofkit-spec-cache ")  # rebuilt


def test_a_tampered_entry_is_ignored_and_rebuilt(specs):
    _load(specs)
    raw = _cache_text()
    assert b"3350000000000.0" in raw
    tampered = raw.replace(b"3350000000000.0", b"8000000000000.0")  # an H100 with 8 TB/s
    cache_file().write_bytes(tampered)
    assert _bandwidth(specs) == H100_BW
    assert _cache_text() == raw  # rebuilt as it was


@pytest.mark.parametrize("cut", [0.0, 0.5, 0.999])
def test_a_truncated_cache_is_ignored(specs, cut):
    _load(specs)
    raw = _cache_text()
    cache_file().write_bytes(raw[: int(len(raw) * cut)])
    assert _bandwidth(specs) == H100_BW
    assert _cache_text() == raw


def test_a_foreign_cache_is_ignored(specs):
    _load(specs)
    raw = _cache_text()
    head, _, body = raw.partition(b"\n")
    fields = head.split()
    fields[2] = b"0" * 64  # another installation's or version's stamp
    cache_file().write_bytes(b" ".join(fields) + b"\n" + body)
    assert SpecCache().specs == {}
    assert _bandwidth(specs) == H100_BW and _cache_text() == raw


def test_an_entry_that_does_not_fit_its_class_is_read_from_the_file(specs):
    _load(specs)
    data = json.loads(_cache_text().partition(b"\n")[2])
    for entry in data["specs"].values():
        entry["data"] = json.dumps({"name": "h100-sxm", "evil": "__import__('os')"})
    body = json.dumps(data).encode()
    head = _cache_text().partition(b"\n")[0].split()
    head[3] = hashlib.sha256(body).hexdigest().encode()
    cache_file().write_bytes(b" ".join(head) + b"\n" + body)
    assert _bandwidth(specs) == H100_BW


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777])
def test_a_cache_folder_others_can_write_is_refused(tmp_path, monkeypatch, specs, mode):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    monkeypatch.setenv("ROOFKIT_CACHE_DIR", str(shared))
    with pytest.warns(CacheWarning, match="can write to it"):
        assert _bandwidth(specs) == H100_BW
    assert list(shared.iterdir()) == []  # ran uncached: nothing written


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="handing a folder to another user needs root")
def test_a_cache_folder_of_another_user_is_refused(tmp_path, monkeypatch, specs):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 4242, 4242)
    monkeypatch.setenv("ROOFKIT_CACHE_DIR", str(theirs))
    with pytest.warns(CacheWarning, match="another user"):
        assert _bandwidth(specs) == H100_BW
    assert list(theirs.iterdir()) == []


def test_a_cache_file_others_can_write_is_not_read(specs):
    _load(specs)
    path = cache_file()
    path.chmod(0o666)
    assert SpecCache().specs == {}
    path.chmod(0o600)
    assert SpecCache().specs


def test_a_symlinked_cache_file_is_not_read(specs, tmp_path):
    _load(specs)
    path = cache_file()
    elsewhere = tmp_path / "elsewhere.json"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    assert SpecCache().specs == {}


def test_a_new_cache_folder_is_private(tmp_path, monkeypatch, specs):
    monkeypatch.setenv("ROOFKIT_CACHE_DIR", str(tmp_path / "new" / "cache"))
    _load(specs)
    assert cache_file().exists()
    assert (tmp_path / "new" / "cache").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("where", ["write", "replace"])
def test_a_failed_save_leaves_no_temp_file(monkeypatch, specs, where):
    import errno

    from roofkit import cache as cache_mod

    def full(*_, **__):
        raise OSError(errno.ENOSPC, "No space left on device")

    if where == "replace":
        monkeypatch.setattr(cache_mod.os, "replace", full)
    else:
        real = cache_mod.os.fdopen

        class Full:
            def __init__(self, fh):
                self.fh = fh

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.fh.close()

            write = full

        monkeypatch.setattr(cache_mod.os, "fdopen", lambda fd, mode: Full(real(fd, mode)))
    assert _bandwidth(specs) == H100_BW
    assert list(cache_file().parent.iterdir()) == []


def test_entries_of_vanished_spec_files_are_pruned(tmp_path, specs):
    other = tmp_path / "other"
    spec = other / "devices" / "gone.toml"
    spec.parent.mkdir(parents=True)
    text = (specs / "devices" / "h100-sxm.toml").read_text()
    lines = [ln for ln in text.splitlines() if not ln.startswith(("aliases", "symbol"))]
    spec.write_text("\n".join(lines).replace('name = "h100-sxm"', 'name = "gone-1"') + "\n")
    _load(specs, other)
    assert str(spec).encode() in _cache_text()
    spec.unlink()
    _load(specs)
    assert str(spec).encode() not in _cache_text()


def test_an_edit_keeping_size_and_mtime_is_seen_through_the_cache(specs):
    spec = specs / "devices" / "h100-sxm.toml"
    assert _bandwidth(specs) == H100_BW
    st = spec.stat()
    text = spec.read_text()
    spec.write_text(text.replace('bandwidth = "3.35 TB/s"', 'bandwidth = "3.36 TB/s"'))
    os.utime(spec, ns=(st.st_atime_ns, st.st_mtime_ns))  # as `cp -p` or `rsync -t`
    assert spec.stat().st_size == st.st_size
    assert _bandwidth(specs) == 3.36e12


def test_no_cache_writes_nothing(monkeypatch, specs):
    folder = cache_file().parent
    monkeypatch.setenv("ROOFKIT_NO_CACHE", "1")
    assert cache_file() is None
    assert _bandwidth(specs) == H100_BW
    assert not folder.exists()


@pytest.mark.slow
def test_every_shipped_spec_comes_back_from_the_cache_identical():
    from roofkit.plain import same

    with deadline(120):
        fresh = roofkit.build_registry(entry_points=False, cache=False)
        roofkit.build_registry(entry_points=False)
        warm = roofkit.build_registry(entry_points=False)
    for folder, cat in fresh.catalogues.items():
        for key in cat:
            assert same(warm.catalogues[folder][key], cat[key]), (folder, key)


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_no_change_to_the_cache_file_changes_a_loaded_spec(specs, data):
    """Flip, drop or insert any bytes of the cache file: what loads is the file's spec."""
    from roofkit.plain import same

    fresh = _load(specs)["devices"]["h100-sxm"]
    path = cache_file()
    raw = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        how = data.draw(st.sampled_from(["flip", "drop", "insert", "cut"]))
        if how == "flip":
            raw[at] ^= data.draw(st.integers(1, 255))
        elif how == "drop":
            del raw[at]
        elif how == "insert":
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        else:
            del raw[at:]
        if not raw:
            break
    path.write_bytes(bytes(raw))
    assert same(_load(specs)["devices"]["h100-sxm"], fresh)
