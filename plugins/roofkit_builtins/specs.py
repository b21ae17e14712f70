"""Registers roofkit's builtin spec folder (devices, workloads, circuits, ops…)."""

from roofkit import hookimpl
from roofkit.paths import builtin_specs_dir


@hookimpl
def roofkit_register_spec_dirs():
    return [builtin_specs_dir()]
