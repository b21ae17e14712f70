"""The ``roofkit`` command line. Each command group lives in its own module and registers
its subcommands; exit codes: 0 ok, 1 bad input or spec, 2 does not fit (when enforced)."""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import OOMError, PluginError, RoofkitError, SpecError, UnknownNameError

#: command modules, each with ``register(subparsers)``
COMMAND_MODULES = [
    "roofkit.cli.catalog",
    "roofkit.cli.engine",
    "roofkit.cli.scenarios",
    "roofkit.cli.circuit",
    "roofkit.cli.serving",
]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits 2; roofkit reserves 2 for "does not fit"
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(1)


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = _Parser(prog="roofkit", description="Predict how ML workloads perform on hardware "
                     "from first principles.")
    parser.add_argument("--version", action="version", version=f"roofkit {__version__}")
    parser.add_argument("--spec-path", action="append", default=[], metavar="DIR",
                        help="extra spec folder (repeatable), layered after plugin spec dirs")
    parser.add_argument("--no-plugins", action="store_true",
                        help="do not load third-party plugins from entry points")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    try:
        return args.func(args) or 0
    except OOMError as exc:
        print(f"roofkit: does not fit: {exc}", file=sys.stderr)
        return 2
    except (SpecError, UnknownNameError, PluginError) as exc:
        print(f"roofkit: {exc}", file=sys.stderr)
        return 1
    except RoofkitError as exc:
        print(f"roofkit: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # validation of numeric arguments
        print(f"roofkit: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
