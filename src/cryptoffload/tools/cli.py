"""The `cryptoffload` command: its parser, `engines`, `selftest`, and the dispatch."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from typing import Any

from rich.console import Console
from rich.table import Table

from cryptoffload import __version__
from cryptoffload.caam.tools.cli import add_parser as add_caam_parser
from cryptoffload.core.provider import Provider, default_provider
from cryptoffload.errors import EngineError
from cryptoffload.tools.bench.cli import add_parsers as add_bench_parsers
from cryptoffload.tools.bench.cli import engine_list
from cryptoffload.tools.calibrate_cli import add_parser as add_calibrate_parser
from cryptoffload.tools.engine_rows import engine_rows
from cryptoffload.tools.run import add_parser as add_run_parser
from cryptoffload.tools.run import split as split_run_argv
from cryptoffload.tools.verify_cli import add_parser as add_verify_parser


def _provider(specs: Sequence[str] | None) -> Provider:
    return Provider(list(specs)) if specs else default_provider()


def _add_engine_options(p: argparse.ArgumentParser) -> None:
    """``--engine SPEC`` (repeatable) and ``--engines LIST``, gathered in order into ``specs``."""
    p.add_argument(
        "--engine",
        dest="specs",
        action="append",
        metavar="SPEC",
        help="an engine spec to use instead of the engines found (repeatable), e.g. software",
    )
    p.add_argument(
        "--engines",
        dest="specs",
        action="extend",
        type=engine_list,
        metavar="LIST",
        help="comma-separated engine specs, as for bench (e.g. software,afalg:any)",
    )


#: Detail keys shown in tables of their own rather than in the detail column.
_SHOWN_APART = ("algorithms", "skipped", "alternatives")


def cmd_engines(args: argparse.Namespace, console: Console) -> int:
    from cryptoffload.core import directpath

    provider = _provider(args.specs)
    rows = engine_rows(provider)
    direct = "compiled" if directpath.COMPILED else "pure"
    if args.json:
        out = {"engines": rows, "policy": provider.policy.to_dict(), "direct_path": direct}
        print(json.dumps(out, indent=2))
        return 0
    table = Table(title="crypto engines on this machine (in priority order)")
    for column in ("engine", "status", "claims", "detail"):
        table.add_column(column, overflow="fold")
    for row in rows:
        status = (
            "[green]available[/]" if row["available"] else f"[red]not available[/]: {row['reason']}"
        )
        claims = f"{len(row['algorithms'])} algorithms" if row["algorithms"] else "-"
        detail = "\n".join(f"{k}: {v}" for k, v in row["detail"].items() if k not in _SHOWN_APART)
        table.add_row(row["name"], status, claims, detail)
    console.print(table)
    for row in rows:
        _print_bindings(row, console)
    if args.verbose:
        for row in rows:
            if row["algorithms"]:
                console.print(f"[bold]{row['name']}[/] claims: " + ", ".join(row["algorithms"]))
        for row in rows:
            if "figures" in row:
                figures = ", ".join(f"{k} {v}" for k, v in row["figures"].items())
                console.print(f"{row['name']} figures: {figures}", markup=False, highlight=False)
    console.print(
        "Software's AES-GCM/CCM ops take the direct path "
        + (
            "compiled (cryptoffload.core._directpath)."
            if directpath.COMPILED
            else "in pure Python (CRYPTOFFLOAD_PURE_PYTHON set, or no compiler at install time)."
        ),
        highlight=False,
    )
    offloaders = [r for r in rows if r["name"] != "software" and r["available"]]
    if not offloaders:
        console.print(
            "No crypto engine other than software is available here: every operation runs in "
            "OpenSSL on the CPU."
        )
    return 0


def _print_bindings(row: dict[str, Any], console: Console) -> None:
    """Per algorithm: the driver an engine binds, hardware or software, and, from an engine
    over the kernel (AF_ALG, cryptodev), the kernel's name for it and its priority."""
    bound, skipped = row["detail"].get("algorithms"), row["detail"].get("skipped")
    if not bound and not skipped:
        _print_alternatives(row, console)
        return
    # The protocol promises only "driver" and "hardware"; PKCS#11 and synthetic give no more.
    bindings = {
        alg: b if isinstance(b, Mapping) else {} for alg, b in sorted((bound or {}).items())
    }
    kernel = any("kernel name" in b for b in bindings.values())
    ranked = any("priority" in b for b in bindings.values())
    columns = ["algorithm", "kernel name", "driver", "priority", "kind"]
    shown = [c for c in columns if (c != "kernel name" or kernel) and (c != "priority" or ranked)]
    table = Table(title=f"{row['name']}: algorithm bindings")
    for column in shown:
        table.add_column(column)
    for alg, b in bindings.items():
        kind = {True: "[green]hardware[/]", False: "software"}.get(b.get("hardware"), "unknown")
        cells = {
            "algorithm": alg,
            "kernel name": str(b.get("kernel name", "")),
            "driver": str(b.get("driver", "")),
            "priority": str(b.get("priority", "-")),  # cryptodev's session info gives none
            "kind": kind,
        }
        table.add_row(*(cells[c] for c in shown))
    for alg, reason in sorted((skipped or {}).items()):
        table.add_row(alg, *([""] * (len(shown) - 2)), f"[dim]skipped: {reason}[/]")
    console.print(table)
    _print_alternatives(row, console)


def _print_alternatives(row: dict[str, Any], console: Console) -> None:
    """Hardware drivers registered beside the ones an engine uses, with the spec pinning each."""
    others = row["detail"].get("alternatives")
    if not others:
        return
    table = Table(title=f"{row['name']}: hardware drivers the kernel does not choose")
    for column in ("algorithm", "kernel name", "driver", "priority", "pin with"):
        table.add_column(column)
    for alg, found in sorted(others.items()):
        for a in found:
            kernel_name, priority = a.get("kernel name", ""), str(a.get("priority", "-"))
            table.add_row(alg, kernel_name, a["driver"], priority, a["spec"])
    console.print(table)


def cmd_selftest(args: argparse.Namespace, console: Console) -> int:
    from cryptoffload.tools import selftest

    provider = _provider(args.specs)
    engines = [e for e in provider.engines if e.name != "software"]
    with console.status("running known-answer tests...") if not args.json else nullcontext():
        results = selftest.run(engines)
    failed = [r for r in results if r.failed]
    coverage = selftest.coverage(provider, results)
    if args.json:
        out = {"engines": coverage, "results": [vars(r) for r in results], "failed": len(failed)}
        print(json.dumps(out, indent=2))
        return 1 if failed else 0
    table = Table(title="self-test: known answers through each engine")
    for column in ("engine", "algorithm", "result", "detail"):
        table.add_column(column, overflow="fold")
    style = {"pass": "green", "FAIL": "bold red", "fault": "red", "declined": "yellow"}
    for r in results:
        table.add_row(r.engine, r.algorithm, f"[{style[r.status]}]{r.status}[/]", r.detail)
    console.print(table)
    for row in coverage:
        if not row["tested"]:
            console.print(f"engine {row['name']} not tested: {row['reason']}", markup=False)
    verdict = f"{len(failed)} failed" if failed else "all passed"
    tested = sum(row["tested"] for row in coverage)
    console.print(f"{len(results)} checks on {tested} engine(s): {verdict}")
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cryptoffload",
        description="One crypto API over the machine's crypto engines: see what is offloaded.",
    )
    parser.add_argument("--version", action="version", version=f"cryptoffload {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "engines", help="list the engines found, why others are not, what they claim"
    )
    _add_engine_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("-v", "--verbose", action="store_true", help="list every algorithm claimed")
    p.set_defaults(func=cmd_engines)

    p = sub.add_parser(
        "selftest",
        help="known-answer tests through every engine found",
        description="Known answers through each engine (those named with --engine/--engines, "
        "else every engine found) and through software. Exit status 1 on a wrong answer or an "
        "engine fault; declines and engines not tested are reported only.",
    )
    _add_engine_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_selftest)

    add_bench_parsers(sub)
    _add_engine_options(add_verify_parser(sub))
    _add_engine_options(add_calibrate_parser(sub))
    add_caam_parser(sub)
    add_run_parser(sub)
    return parser


#: Exit status when standard output is closed before all was written: 128 + SIGPIPE, what a shell
#: shows for a Unix tool that SIGPIPE ended (``yes | head -1``), with nothing on stderr.
EXIT_PIPE_CLOSED = 141
#: Exit status after Ctrl-C (KeyboardInterrupt): 128 + SIGINT.
EXIT_INTERRUPTED = 130


class _Console(Console):
    """A rich Console that lets a closed stdout reach :func:`main` as BrokenPipeError.

    rich's own reaction (``SystemExit(1)``) would pass as a failure that says nothing.
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def _stdout_closed() -> int:
    """Standard output is gone (``| head -1``): point it at /dev/null so the interpreter's last
    flush does not complain, and end quietly (Python's recipe in the `signal` module's notes)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor (an in-process capture)
        pass
    return EXIT_PIPE_CLOSED


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `cryptoffload` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    program_args: list[str] = []
    if argv[:1] == ["run"]:  # the program's own arguments are not ours to parse
        own, program_args = split_run_argv(argv[1:])
        argv = ["run", *own]
    elif argv[:1] in (["bench"], ["sweep"]):
        from cryptoffload.tools.bench.cli import join_signed_values

        argv = join_signed_values(argv)
    args = build_parser().parse_args(argv)
    if program_args:
        args.program_args = program_args
    console = _Console()
    if not console.is_terminal:
        console = _Console(width=200)  # redirected output: keep rows on one line
    try:
        code = args.func(args, console)
        sys.stdout.flush()  # a pipe closed early shows here, not at the interpreter's exit
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except KeyboardInterrupt:
        # Ctrl-C: one line, no traceback; 130 = 128 + SIGINT, as a shell shows for it
        print(f"cryptoffload {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (EngineError, ValueError, OSError) as exc:
        print(f"cryptoffload {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
