"""``roofkit reference [-o FILE] [--check]``: the spec reference page from the schema."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("reference", help="write the spec reference page (every key of every "
                       "spec kind) generated from the schema",
                       description="Generate docs/reference.md from the attrs spec classes.")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    p.add_argument("--check", action="store_true",
                   help="exit 1 when FILE differs from the generated page")
    p.set_defaults(func=cmd_reference)


def cmd_reference(args) -> int:
    from ..docs import run

    return run(args.output, args.check)
