"""docs/reference.md is generated from the spec classes: every key of every spec kind, and a
failing test when the committed page is stale."""

from __future__ import annotations

from pathlib import Path

import attrs

from roofkit.cli import main
from roofkit.docs import _table, reference_markdown
from roofkit.schema.fields import count, fraction, quantity
from roofkit.spec_kinds import SPEC_KINDS

PAGE = Path(__file__).parents[1] / "docs" / "reference.md"


def test_the_committed_reference_page_is_the_generated_one(registry):
    assert PAGE.read_text(encoding="utf-8") == reference_markdown(registry), (
        "docs/reference.md is stale: run `python -m roofkit.docs -o docs/reference.md`")


def test_every_field_of_every_spec_kind_is_on_the_page(registry):
    page = reference_markdown(registry)

    def walk(cls, prefix):
        for f in attrs.fields(cls):
            if f.init:
                yield f"{prefix}{f.name}"

    for kind in SPEC_KINDS.values():
        assert f"## {kind.noun} ({kind.folder})" in page
        for key in walk(kind.cls, ""):
            assert f"| `{key}` |" in page, (kind.folder, key)
    for key in ("interconnect.max_devices", "host_link.bandwidth", "sram.capacity",
                "memory.usable_fraction", "engines.KEY.components.KEY.by_batch"):
        assert f"| `{key}` |" in page, key


def test_units_ranges_defaults_and_required_come_from_the_field_metadata():
    @attrs.frozen
    class Toy:
        """A toy spec."""

        capacity: float = quantity("bytes")
        share: float = fraction(default=0.5)
        lanes: int = count(default=2, minimum=1)
        label: str = ""

    out: list[str] = []
    _table(Toy, "toy.", out, set())
    rows = {line.split("|")[1].strip(): line for line in out if line.startswith("| `")}
    # the field's declared range: quantity("bytes") is (0, PLAUSIBLE["bytes"] = 1 PB]
    assert rows["`toy.capacity`"] == ("| `toy.capacity` | quantity | bytes (`\"80 GB\"`) | "
                                      "(0 B, 1 PB] |  | yes |")
    assert "| (0, 1] | `0.5` |" in rows["`toy.share`"]
    assert "| [1, 1000000] | `2` |" in rows["`toy.lanes`"]  # count()'s MAX_COUNT
    assert rows["`toy.label`"].endswith('| `""` |  |')
    assert out[0] == "A toy spec."


def test_check_fails_on_a_stale_page_and_passes_on_a_fresh_one(tmp_path, capsys):
    page = tmp_path / "reference.md"
    page.write_text("# old\n")
    assert main(["reference", "-o", str(page), "--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert main(["reference", "-o", str(page)]) == 0
    assert main(["reference", "-o", str(page), "--check"]) == 0


def test_a_range_object_writes_itself_and_known_keys_are_listed():
    class Span:  # the shape of a declared value range: it words itself
        def text(self, dimension=None):
            return "[1, 64]"

    @attrs.frozen
    class Toy:
        width: float = attrs.field(default=1.0, metadata={"roofkit": {"range": Span()}})
        table: dict = attrs.field(factory=dict, metadata={"roofkit": {
            "keys": ("kernel",), "closed": True}})

    out: list[str] = []
    _table(Toy, "", out, set())
    text = "\n".join(out)
    assert "| `width` | number |  | [1, 64] | `1.0` |  |" in text
    assert "keys only `kernel`" in text


def test_the_page_is_the_same_whether_or_not_attrs_resolved_the_types(registry):
    from roofkit.circuit.spec import CircuitTemplate, NodeSpec, PartSpec

    before = reference_markdown(registry)
    for cls in (CircuitTemplate, NodeSpec, PartSpec):  # as structuring a spec file does
        attrs.resolve_types(cls)
    assert reference_markdown(registry) == before
    assert "| `when` | expression |" in before
