"""Importers: other tools' model descriptions as roofkit specs (Hugging Face configs)."""

from .hf import workload_from_hf, workload_table, workload_toml
from .hf_folder import find_cached, is_hf_path, read_hf

__all__ = ["find_cached", "is_hf_path", "read_hf", "workload_from_hf", "workload_table",
           "workload_toml"]
