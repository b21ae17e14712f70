"""A plugin distribution installed with pip registers a precision through the entry point."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DIST = Path(__file__).parent / "plugin_dist"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(DIST)],
                   check=True, capture_output=True)
    return target


def run(installed, *args, **env):
    environ = {**os.environ, "PYTHONPATH": str(installed), **env}
    if "ROOFKIT_DISABLE_PLUGIN_AUTOLOAD" not in env:
        environ.pop("ROOFKIT_DISABLE_PLUGIN_AUTOLOAD", None)
    code = ("import sys, roofkit.cli; sys.exit(roofkit.cli.main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=environ)


@pytest.mark.slow
def test_roofkit_plugins_lists_the_installed_plugin(installed):
    out = run(installed, "plugins", "--json")
    assert out.returncode == 0, out.stderr
    plugins = {p["name"]: p for p in json.loads(out.stdout)}
    assert plugins["fp6"]["distribution"] == "roofkit-fp6-plugin"
    assert plugins["fp6"]["version"] == "0.3.1"
    assert plugins["fp6"]["hooks"] == ["roofkit_register_precisions"]


@pytest.mark.slow
def test_the_registry_returns_the_plugin_precision(installed):
    code = ("import roofkit; p = roofkit.build_registry().precision('FP6-E2M3'); "
            "print(p.name, p.bits_per_element, p.slot)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(installed)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["fp6-e2m3", "6.0", "fp6"]


@pytest.mark.slow
def test_autoload_can_be_disabled(installed):
    out = run(installed, "plugins", "--json", ROOFKIT_DISABLE_PLUGIN_AUTOLOAD="1")
    assert out.returncode == 0, out.stderr
    assert "fp6" not in {p["name"] for p in json.loads(out.stdout)}
    code = "import roofkit; roofkit.build_registry().precision('fp6-e2m3')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(installed),
                              "ROOFKIT_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert out.returncode != 0 and "Unknown precision 'fp6-e2m3'" in out.stderr
