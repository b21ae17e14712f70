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
    "roofkit.cli.completion",
    "roofkit.cli.plot",
    "roofkit.cli.fleet",
]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits 2; roofkit reserves 2 for "does not fit"
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(1)


#: the options every command takes, before or after its name: (flags, dest, kwargs)
_GLOBAL_OPTIONS = (
    (("--spec-path",), "spec_path", dict(
        action="append", metavar="DIR",
        help="extra spec folder or file (repeatable), layered after plugin spec dirs")),
    (("--no-plugins",), "no_plugins", dict(
        action="store_true", help="do not load third-party plugins from entry points")),
)
_AFTER = "_after_"  # dest prefix of the copies a subcommand parses


def global_options(*, after: bool = False) -> argparse.ArgumentParser:
    """A parent parser holding the options every command takes. The top-level copy stores
    into ``spec_path``/``no_plugins``; the copy a subcommand inherits (``after``) stores
    into its own names, default unset, so a subcommand never overwrites what came before
    its name; :func:`merge_global_options` joins the two."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("options of every command")
    for flags, dest, kwargs in _GLOBAL_OPTIONS:
        if after:
            group.add_argument(*flags, dest=_AFTER + dest, default=argparse.SUPPRESS, **kwargs)
        else:
            default = [] if kwargs["action"] == "append" else False
            group.add_argument(*flags, dest=dest, default=default, **kwargs)
    return parent


def merge_global_options(args: argparse.Namespace) -> argparse.Namespace:
    """``--spec-path A cmd --spec-path B`` layers A then B; ``--no-plugins`` on either side."""
    for _, dest, kwargs in _GLOBAL_OPTIONS:
        if not hasattr(args, _AFTER + dest):
            continue
        later = getattr(args, _AFTER + dest)
        delattr(args, _AFTER + dest)
        if kwargs["action"] == "append":
            setattr(args, dest, [*getattr(args, dest, []), *later])
        else:
            setattr(args, dest, getattr(args, dest, False) or later)
    return args


class _CommandParser(_Parser):
    """A subcommand's parser: it inherits the global options, so they work after its name."""

    def __init__(self, *args, parents=(), **kwargs):
        super().__init__(*args, parents=[*parents, global_options(after=True)], **kwargs)


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = _Parser(prog="roofkit", description="Predict how ML workloads perform on hardware "
                     "from first principles.", parents=[global_options()])
    parser.add_argument("--version", action="version", version=f"roofkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def machine_output(args) -> bool:
    """Whether the command writes JSON, CSV or Markdown (then no progress bar is drawn)."""
    return any(getattr(args, flag, False) for flag in ("json", "csv", "markdown"))


def main(argv=None) -> int:
    parser = build_parser()
    args = merge_global_options(parser.parse_args(argv))
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    try:
        from ..progress import allowed
        from . import common

        common.announce_names(args)
        with allowed(not machine_output(args)):
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
