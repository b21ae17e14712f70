"""Spec classes: frozen attrs types that TOML files are structured into."""
