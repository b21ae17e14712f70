"""The wheel carries the builtin specs, and the installed package finds them."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_contains_specs_and_packages(tmp_path):
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("roofkit-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "roofkit/_specs/devices/h100-sxm.toml" in names
    assert "roofkit/_specs/workloads/llama-3.1-8b.toml" in names
    assert "roofkit/units.txt" in names and "roofkit/py.typed" in names
    assert "roofkit_builtins/precisions.py" in names
    specs = {n for n in names if n.startswith("roofkit/_specs/devices/")}
    assert len(specs) == len(list((ROOT / "specs" / "devices").glob("*.toml")))
