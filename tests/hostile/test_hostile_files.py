"""Spec paths that name no regular file, or one too big or too deep: each is a located
error, never a hang, a MemoryError or a traceback. Every case runs under a deadline."""

from __future__ import annotations

import os
import sys

import pytest
from deadline import deadline

import roofkit
from roofkit.errors import SpecError
from roofkit.files import MAX_BYTES
from roofkit.loader import read_toml
from roofkit.testing import run_cli

posix = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev/zero are POSIX")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFKIT_CACHE_DIR", str(tmp_path / "cache"))


def _refused(path, *words):
    with deadline(10), pytest.raises(SpecError) as info:
        read_toml(path)
    text = str(info.value)
    assert str(path) in text
    for w in words:
        assert w in text
    return text


@posix
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "x.toml"
    os.mkfifo(fifo)
    _refused(fifo, "FIFO", "not a regular file")


@posix
def test_a_link_to_dev_zero_is_refused_without_reading(tmp_path):
    link = tmp_path / "z.toml"
    link.symlink_to("/dev/zero")
    _refused(link, "character device")


def test_a_symlink_loop_is_refused(tmp_path):
    (tmp_path / "a.toml").symlink_to(tmp_path / "b.toml")
    (tmp_path / "b.toml").symlink_to(tmp_path / "a.toml")
    _refused(tmp_path / "a.toml", "symlink loop")


def test_a_file_over_the_size_cap_is_refused(tmp_path):
    big = tmp_path / "big.toml"
    big.write_bytes(b"# " + b"x" * MAX_BYTES + b"\n")
    _refused(big, "byte limit")


@pytest.mark.parametrize("opening,closing", [("[", "]"), ("{a=", "}")])
def test_deeply_nested_values_are_refused(tmp_path, opening, closing):
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + opening * 3000 + "1" * (opening == "{a=") + closing * 3000 + "\n")
    _refused(deep, "nest more than")


def test_deeply_nested_dotted_keys_are_refused(tmp_path):
    deep = tmp_path / "deep.toml"
    deep.write_text("a" + ".b" * 3000 + " = 1\n")
    _refused(deep, "nest more than")


@posix
def test_check_of_a_folder_with_a_fifo_and_a_loop_reports_both(tmp_path, capsys):
    devices = tmp_path / "user" / "devices"
    devices.mkdir(parents=True)
    os.mkfifo(devices / "x.toml")
    (devices / "a.toml").symlink_to(devices / "b.toml")
    (devices / "b.toml").symlink_to(devices / "a.toml")
    (devices / "sub").symlink_to(devices)  # a folder loop: the walk must end
    with deadline(30):
        code, _, err = run_cli(capsys, "check", str(tmp_path / "user"), plugins=False)
    assert code == 1
    assert "FIFO" in err and "symlink loop" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("make", ["loop", "fifo"])
def test_check_given_a_bad_path_itself_is_a_located_error(tmp_path, capsys, make):
    target = tmp_path / "x.toml"
    if make == "loop":
        target.symlink_to(tmp_path / "y.toml")
        (tmp_path / "y.toml").symlink_to(target)
    else:
        if sys.platform == "win32":
            pytest.skip("FIFOs are POSIX")
        os.mkfifo(target)
    with deadline(30):
        code, _, err = run_cli(capsys, "check", str(target), plugins=False)
    assert code == 1
    assert str(target) in err and "Traceback" not in err


@posix
def test_a_fifo_in_a_spec_path_does_not_hang_the_registry(tmp_path, monkeypatch):
    devices = tmp_path / "user" / "devices"
    devices.mkdir(parents=True)
    os.mkfifo(devices / "x.toml")
    with deadline(30), pytest.raises(SpecError, match="FIFO"):
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "user"])


@posix
@pytest.mark.parametrize("argv", [("show", "{x}"), ("decode", "llama-3.1-8b", "{x}"),
                                  ("solve", "{x}", "h100")])
def test_commands_given_a_fifo_answer_with_a_located_error(tmp_path, capsys, argv):
    fifo = tmp_path / "x.toml"
    os.mkfifo(fifo)
    with deadline(30):
        code, _, err = run_cli(capsys, *(a.format(x=fifo) for a in argv), plugins=False)
    assert code == 1 and "FIFO" in err and str(fifo) in err and "Traceback" not in err


def test_a_fifo_named_like_safetensors_is_refused_not_read(tmp_path):
    import os

    from roofkit.errors import SpecError
    from roofkit.importers.hf_folder import safetensors_elements

    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    with pytest.raises(SpecError, match="not a regular file"):
        safetensors_elements(fifo)
