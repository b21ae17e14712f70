"""The ``roofkit`` command line. Each command group lives in its own module and registers
its subcommands; exit codes: 0 ok, 1 bad input or spec, 2 does not fit (when enforced)."""

from __future__ import annotations

import argparse
import importlib
import sys

#: command modules, each with ``register(subparsers)``
COMMAND_MODULES = [
    "roofkit.cli.catalog",
    "roofkit.cli.engine",
    "roofkit.cli.scenarios",
    "roofkit.cli.circuit",
    "roofkit.cli.serving",
    "roofkit.cli.calibrate",
    "roofkit.cli.completion",
    "roofkit.cli.plot",
    "roofkit.cli.fleet",
    "roofkit.cli.importers",
    "roofkit.cli.docs",
    "roofkit.cli.load",
]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits 2; roofkit reserves 2 for "does not fit"
        from .failure import UsageError

        raise UsageError(message, self.format_usage(), self.prog)


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


def _wants_json(argv, args=None) -> bool:
    """Whether the command asked for ``--json`` (read from the words when parsing failed)."""
    if args is not None:
        return bool(getattr(args, "json", False))
    words = sys.argv[1:] if argv is None else argv
    return any(isinstance(w, str) and w == "--json" for w in words)


def main(argv=None) -> int:
    """Run one command; every failure is one message (``--json``: one JSON object on stdout,
    :mod:`roofkit.cli.failure`) and an exit code of 1 (bad input) or 2 (does not fit)."""
    from . import failure

    args = None
    try:
        parser = build_parser()
        args = merge_global_options(parser.parse_args(argv))
        if not getattr(args, "func", None):
            parser.print_help()
            return 1
        from ..progress import allowed
        from . import common

        common.announce_names(args)
        with allowed(not machine_output(args)):
            return args.func(args) or 0
    except BrokenPipeError:
        return 0
    except (KeyboardInterrupt, SystemExit):
        raise
    except failure.UsageError as exc:  # as argparse does: exit (1, not argparse's 2)
        raise SystemExit(failure.report(exc, _wants_json(argv, args))) from None
    except Exception as exc:  # every failure: reported once, the command's way
        return failure.report(exc, _wants_json(argv, args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
