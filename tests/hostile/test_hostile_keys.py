"""Hostile keys: every spec kind refuses an unknown key at every depth of a file, naming
its key path and the close known key; nothing misspelled is silently ignored."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from roofkit.loader import problems_of
from roofkit.spec_kinds import SPEC_KINDS

SPECS = Path(__file__).parents[2] / "specs"

#: Tables whose keys are names the file itself defines (a source, a template name, a
#: measurement's label), so a new key is a new definition, not a misspelling. Each is
#: still checked where a name is used: provenance names a source key, an expression reads
#: a defined name, a validation case names an engine profile.
FREE = {
    "sources": "source keys, cited by [provenance]",
    "defaults": "template names a workload may set",
    "derived": "template names computed from the dims",
    "edges": "named tensors between nodes",
    "fixed": "dims a template does not vary, which a workload may state at that value",
    "let": "names a rule or part defines for its expressions",
    "attention": "kernel labels of measured attention throughput",
    "allreduce": "labels of all-reduce measurements (algorithm-devices)",
    "host_link": "labels of host-link measurements",
    "engines": "engine profile names, named by a validation case's runtime",
    "components": "the parts of an engine's host step, summed",
    "inputs": "a scenario's inputs: checked against its kind's inputs",
}


def _tables(data, path=""):
    """(key path, table) for every table of a raw TOML document, arrays of tables too."""
    yield path, data
    for key, value in data.items():
        sub = f"{path}.{key}" if path else key
        if isinstance(value, dict):
            yield from _tables(value, sub)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    yield from _tables(item, f"{sub}[{i}]")


def _at(data, path):
    node = data
    if not path:
        return node
    for part in path.replace("[", ".[").split("."):
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    return node


def _examples(kind, n=3):
    """The ``n`` shipped files of ``kind`` with the most tables (the deepest examples)."""
    import tomllib

    files = sorted((SPECS / kind.folder).glob("*.toml"))
    docs = [(f, tomllib.loads(f.read_text())) for f in files]
    docs.sort(key=lambda fd: -sum(1 for _ in _tables(fd[1])))
    return docs[:n]


def _cases():
    out = []
    for kind in SPEC_KINDS.values():
        for file, data in _examples(kind):
            for path, _table in _tables(data):
                if path.split(".")[-1].split("[")[0] in FREE:
                    continue
                out.append(pytest.param(kind, file, data, path,
                                        id=f"{kind.folder}/{file.stem}:{path or '<top>'}"))
    return out


def _problems(registry, kind, data):
    obj, items = problems_of(data, kind.cls, registry.converter)
    if obj is not None and kind.check is not None and not items:
        items = kind.check(obj, {**registry._tables, **registry.catalogues})
    return items


def _near_miss(table: dict) -> tuple[str, str | None]:
    """A misspelling of one of ``table``'s keys (and that key), or an unrelated key."""
    for key in table:
        if len(key) >= 4 and key.isidentifier():
            return key[:-1] + key[-1] * 2 + "x" if len(key) < 6 else key[:-2] + key[-1], key
    return "zzqx", None


@pytest.mark.parametrize(("kind", "file", "data", "path"), _cases())
def test_an_unknown_key_is_refused_at_every_depth(registry, kind, file, data, path):
    assert not _problems(registry, kind, data), f"{file} is not clean to start with"
    hostile = copy.deepcopy(data)
    table = _at(hostile, path)
    key, meant = _near_miss(table)
    if key in table:
        key = key + "q"
    table[key] = copy.deepcopy(next(iter(table.values()))) if table else "x"
    items = _problems(registry, kind, hostile)
    full = f"{path}.{key}" if path else key
    hits = [(p, m) for p, m in items if p == full or (p.endswith(key) and key in m)]
    assert hits, (full, items)
    if meant is not None:
        assert any(meant in m for _, m in hits), (full, meant, hits)


@pytest.mark.parametrize("kind", list(SPEC_KINDS.values()), ids=list(SPEC_KINDS))
def test_every_spec_kind_has_examples_to_inject_into(kind):
    assert _examples(kind), kind.folder


def _check_edited(registry, tmp_path, kind, source, old, new):
    from roofkit.registry import check_specs

    text = source.read_text()
    assert old in text, f"{source.name} no longer writes {old!r}"
    folder = tmp_path / kind
    folder.mkdir()
    edited = text.replace(old, new, 1)
    # a copy under its own name and without aliases: taking the shipped file's names is a
    # collision `check` refuses on its own (tests/hostile/test_hostile_collisions.py)
    edited = re.sub(r'^name = "([^"]+)"', r'name = "\1-edited"', edited, count=1, flags=re.M)
    edited = re.sub(r"^aliases = \[.*?\]", "", edited, count=1, flags=re.M | re.S)
    edited = re.sub(r'^symbol = "([^"]+)"', r'symbol = "\1_EDITED"', edited, count=1, flags=re.M)
    (folder / f"edited-{source.name}").write_text(edited)
    # checked as `roofkit check` does: over the catalogue the file would join
    return check_specs([str(tmp_path)], entry_points=False)[1]


def test_a_misspelled_host_launch_measurement_is_refused(registry, tmp_path):
    problems = _check_edited(registry, tmp_path, "calibration", SPECS / "calibration" /
                             "host.toml", "[launch.kernel]", "[launch.kernl]")
    hits = [p for p in problems if p.key == "launch.kernl"]
    assert hits and "did you mean 'kernel'" in hits[0].message, [str(p) for p in problems]


def test_a_misspelled_runtime_of_a_validation_case_is_refused(registry, tmp_path):
    source = next(p for p in sorted((SPECS / "validation").glob("*.toml"))
                  if 'runtime = "vllm-v0"' in p.read_text())
    problems = _check_edited(registry, tmp_path, "validation", source, 'runtime = "vllm-v0"',
                             'runtime = "vlm-v0"')
    hits = [p for p in problems if p.key == "config.runtime"]
    assert hits and "did you mean 'vllm-v0'" in hits[0].message, [str(p) for p in problems]


def test_a_misspelled_runtime_key_is_refused(registry, tmp_path):
    source = next(p for p in sorted((SPECS / "validation").glob("*.toml"))
                  if 'runtime = "vllm-v0"' in p.read_text())
    problems = _check_edited(registry, tmp_path, "validation", source, 'runtime = "vllm-v0"',
                             'runtme = "vllm-v0"')
    hits = [p for p in problems if p.key == "config.runtme"]
    assert hits and "did you mean 'runtime'" in hits[0].message, [str(p) for p in problems]


def test_a_misspelled_format_role_is_refused(registry, tmp_path):
    source = SPECS / "workloads" / "gpt-oss-20b.toml"
    text = source.read_text()
    line = next(line for line in text.split("[formats]", 1)[1].strip().splitlines()
                if "=" in line)
    role = line.split("=")[0].strip()
    assert text.count(line) == 1
    problems = _check_edited(registry, tmp_path, "workloads", source, line,
                             line.replace(role, role + "s", 1))
    hits = [p for p in problems if p.key == f"formats.{role}s"]
    assert hits and f"did you mean {role!r}" in hits[0].message, [str(p) for p in problems]
