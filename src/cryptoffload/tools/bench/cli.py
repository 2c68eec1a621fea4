"""The `cryptoffload bench`, `sweep` and `compare` commands: their options and handlers."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console

from cryptoffload.core.policy import Policy
from cryptoffload.core.provider import default_provider
from cryptoffload.tools.bench import memory, tls_options
from cryptoffload.tools.engine_specs import comma_list, engine_list

_BLOCKS = {"1k": 1024, "4k": 4096, "16k": 16384, "64k": 65536, "1m": 1 << 20}
#: Upper bounds of --trials and --time: beyond them a run would go on for hours.
MAX_TRIALS = 1000
MAX_SECONDS = 60.0


def add_parsers(subparsers: Any) -> None:
    """Register ``bench``, ``sweep`` and ``compare`` on the main parser's subparsers."""
    _add_bench(subparsers)
    _add_sweep(subparsers)
    _add_compare(subparsers)


def _block_size(text: str) -> int:
    stripped = text.strip()
    if stripped.startswith("-") and _BLOCKS.get(stripped[1:].lower()):
        raise argparse.ArgumentTypeError(
            f"block size must be positive (a number of bytes, 1 or more), got {text!r}"
        )
    value = _BLOCKS.get(stripped.lower())
    if value is None:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"block size must be one of {', '.join(_BLOCKS)} or a number of bytes, got {text!r}"
            ) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(
            f"block size must be positive (a number of bytes, 1 or more), got {value}"
        )
    problem = memory.too_large(value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def _nonempty_list(what: str) -> Callable[[str], list[str]]:
    """An argparse type: a :func:`comma_list` with at least one item."""

    def parse(text: str) -> list[str]:
        items = comma_list(text)
        if not items:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of {what}, got {text!r}"
            )
        return items

    return parse


def _block_sizes(text: str) -> list[int]:
    sizes = [_block_size(part) for part in _nonempty_list("sizes in bytes (or 1k, 16k...)")(text)]
    twice = sorted({size for size in sizes if sizes.count(size) > 1})
    if twice:
        raise argparse.ArgumentTypeError(
            f"each size once: {', '.join(map(str, twice))} bytes given more than once in {text!r}"
        )
    return sizes


#: Options whose value may start with "-" (a negative number such as -1k, refused by its type
#: with a message saying what is expected, not argparse's "expected one argument").
_SIGNED_VALUES = ("--block", "--sizes", "--time", "--trials", "--records", "--transfer")


def join_signed_values(argv: list[str]) -> list[str]:
    """``--block -1k`` as ``--block=-1k``, so that the value reaches its check."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + argv[i:]
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if arg in _SIGNED_VALUES and len(nxt) > 1 and nxt[0] == "-" and nxt[1] in "0123456789.":
            out.append(f"{arg}={nxt}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def _trials(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of trials, 1 or more; got {text!r}"
        )
    if value > MAX_TRIALS:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_TRIALS} trials (the limit keeps a run finite); got {text!r}"
        )
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(
            f"expected seconds per trial, a number above 0 (e.g. 0.25); got {text!r}"
        )
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_SECONDS:g} seconds per trial (the limit keeps a run finite); "
            f"got {text!r}"
        )
    return value


class _GivenSeconds(argparse.Action):
    """``--time``'s value, noted as given: the TLS view refuses it (its trials are connections)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.time_given = True


def _engine_spec(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected an engine spec such as afalg, got {text!r}")
    return text.strip()


def _add_engine_options(p: argparse.ArgumentParser, default: str) -> None:
    """``--engines LIST`` and ``--engine SPEC`` (repeatable), gathered in order into ``engines``."""
    p.add_argument(
        "--engines",
        type=engine_list,
        action="extend",
        metavar="LIST",
        help=f"comma-separated engine specs (default: {default}); software is always measured",
    )
    p.add_argument(
        "--engine",
        type=_engine_spec,
        action="append",
        dest="engines",
        metavar="SPEC",
        help="one engine spec (repeatable; adds to --engines), e.g. afalg:cbc-aes-caam",
    )


def _add_bench(sub: Any) -> None:
    p = sub.add_parser("bench", help="software and engine rows side by side (the main job)")
    p.add_argument(
        "--algs",
        type=_nonempty_list("algorithm names or globs"),
        metavar="LIST",
        help="comma-separated algorithm names or globs (default: the articles' set)",
    )
    _add_engine_options(p, "every engine found")
    p.add_argument(
        "--block",
        type=_block_size,
        default=None,
        metavar="SIZE",
        help="bulk buffer size: 1k, 4k, 16k (default), 64k, 1m or bytes",
    )
    p.add_argument(
        "--embedded",
        action="store_true",
        help="1 KiB blocks, like the embedded benchmark (with --block only --block 1k)",
    )
    p.add_argument(
        "--time",
        type=_seconds,
        default=0.15,
        action=_GivenSeconds,
        metavar="S",
        help=f"seconds per trial (default 0.15, at most {MAX_SECONDS:g})",
    )
    p.add_argument(
        "--trials",
        type=_trials,
        default=5,
        metavar="N",
        help=f"trials per row; the median is shown (default 5: compare needs 4 or more; "
        f"at most {MAX_TRIALS})",
    )
    p.add_argument("--cpu", action="store_true", help="wall, user and sys time per row")
    p.add_argument(
        "--variants",
        action="store_true",
        help="add software rows with the CPU's crypto extensions masked",
    )
    p.add_argument(
        "--use-policy",
        action="store_true",
        help="apply the configured policy to engine rows (default: engines take all)",
    )
    p.add_argument("--format", choices=("table", "md", "csv", "json"), default="table")
    p.add_argument("--out", metavar="FILE", help="write the report here (JSON for table format)")
    p.add_argument(
        "--workload",
        choices=("tls13",),
        help="an application view instead of rows: tls13 handshakes and records",
    )
    tls_options.add(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_bench, time_given=False)


def _add_sweep(sub: Any) -> None:
    p = sub.add_parser("sweep", help="throughput against buffer size, and the crossover")
    p.add_argument(
        "--sizes",
        type=_block_sizes,
        default=[64, 256, 1400, 16384],
        metavar="LIST",
        help="comma-separated sizes in bytes (or 1k, 16k...); default 64,256,1400,16384",
    )
    p.add_argument(
        "--algs",
        type=_nonempty_list("algorithm names or globs"),
        metavar="LIST",
        help="bulk algorithms (default: aes-128-gcm, aes-128-cbc, sha256, sha384)",
    )
    _add_engine_options(p, "every engine found")
    p.add_argument(
        "--time",
        type=_seconds,
        default=0.2,
        metavar="S",
        help=f"seconds per trial (default 0.2, at most {MAX_SECONDS:g})",
    )
    p.add_argument(
        "--trials",
        type=_trials,
        default=3,
        metavar="N",
        help=f"trials per point (default 3, at most {MAX_TRIALS})",
    )
    p.add_argument("--use-policy", action="store_true", help="apply the configured policy")
    p.add_argument("--plot", metavar="FILE.png", help="draw throughput against size")
    p.add_argument("--format", choices=("table", "md", "csv", "json"), default="table")
    p.add_argument("--out", metavar="FILE", help="write the report here")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)


def _add_compare(sub: Any) -> None:
    from cryptoffload.tools.bench import compare

    p = sub.add_parser(
        "compare",
        help="row-by-row changes between two saved bench runs",
        description="Row-by-row changes between two saved bench runs (rows match on algorithm, "
        "operation, engine and block size; rows in one run only are listed). " + compare.legend(),
    )
    p.add_argument("before", help="bench JSON (from --format json or --out)")
    p.add_argument("after", help="bench JSON to compare with it")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_compare)


def _engines_to_measure(specs: list[str] | None) -> list[Any]:
    """Engines for bench rows: those named (software is always measured), else the ones found.

    A named engine that is not available here keeps its rows, which say why; when no named
    engine is available and software was not named either, there is nothing to measure.
    """
    from cryptoffload import engines as registry
    from cryptoffload.tools.bench import runner

    if specs is None:
        provider = default_provider()
        return [e for e in provider.engines if e.name != "software"]
    engines = [registry.from_spec(s) for s in specs if s != "software"]
    absent = runner.unavailable(engines)
    if engines and len(absent) == len(engines) and "software" not in specs:
        reasons = "; ".join(
            f"engine {name} is not available: {why}" for name, why in absent.items()
        )
        raise ValueError(
            f"nothing to measure: {reasons}. Name software too (--engines software,"
            f"{specs[0]}) to measure software with rows that say so"
        )
    return engines


def _row_policy(args: argparse.Namespace) -> Policy | None:
    """The configured policy with --use-policy; None lets engine rows take every operation."""
    return default_provider().policy if args.use_policy else None


def check_output_path(path: str, option: str) -> None:
    """Refuse (ValueError, exit 2) a file that cannot be written, before anything is measured."""
    if os.path.isdir(path):
        raise ValueError(f"{option} {path}: is a directory; give a file name")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        raise ValueError(f"{option} {path}: directory {parent} does not exist")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise ValueError(f"{option} {path}: the file is not writable")
    elif not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {path}: cannot create a file in {parent}")


def check_plot_path(path: str) -> str:
    """The plot's format (from its extension; png without one), checked with its path."""
    from cryptoffload.tools.bench.plot import plot_formats

    check_output_path(path, "--plot")
    ext = os.path.splitext(path)[1].lstrip(".").lower() or "png"
    formats = plot_formats()
    if ext not in formats:
        raise ValueError(
            f"--plot {path}: matplotlib cannot write .{ext} files; use one of "
            + ", ".join(f".{f}" for f in sorted(formats))
        )
    return ext


def _check_outputs(args: argparse.Namespace) -> None:
    if getattr(args, "out", None):
        check_output_path(args.out, "--out")
    if getattr(args, "plot", None):
        check_plot_path(args.plot)


def _emit(text: str, out: str | None) -> None:
    if out:
        try:
            with open(out, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            # What was measured is not lost: it goes to stdout, then the error.
            sys.stdout.write(text)
            sys.stdout.flush()
            raise WriteFailed(f"--out {out}: {exc.strerror or exc}; the report is above") from exc
    else:
        sys.stdout.write(text)


class WriteFailed(OSError):
    """Writing a report or plot failed after measuring: what was measured is printed, exit 1."""


def _report_failures(failures: list[str], command: str) -> int:
    for failure in failures:
        print(f"cryptoffload {command}: {failure}", file=sys.stderr)
    return 1 if failures else 0


def cmd_bench(args: argparse.Namespace, console: Console) -> int:
    """``bench``: software and engine rows, or with ``--workload tls13`` the TLS 1.3 view."""
    from cryptoffload.tools.bench import cases, report, runner
    from cryptoffload.tools.bench.progress import progress_on_stderr

    tls_options.check(args)
    _check_outputs(args)
    if args.tls:
        return _bench_tls(args, console)
    if args.workload == "tls13":
        return _bench_tls13(args, console)
    if args.embedded and args.block not in (None, 1024):
        raise ValueError(
            f"--embedded measures 1 KiB blocks; --block {args.block} contradicts it "
            "(give one or the other)"
        )
    block = 1024 if args.embedded else args.block or 16384
    selected = cases.select(args.algs)
    engines = _engines_to_measure(args.engines)
    result: dict[str, Any] | None = None
    try:
        with progress_on_stderr(len(selected) * (len(engines) + 1), args.quiet) as step:
            result = runner.run(
                selected,
                engines,
                block,
                args.time,
                args.trials,
                with_cpu=args.cpu,
                policy=_row_policy(args),
                progress=step,
            )
        result["machine"]["engines_looked_for"] = _looked_for(args.engines, result)
        if args.variants:
            from cryptoffload.tools.bench import variants

            if not args.quiet:
                Console(stderr=True).print(
                    "running software variants with crypto extensions masked..."
                )
            labels = [c.label for c in selected]
            variant_rows = variants.run_variant(labels, block, args.time, args.trials)
            result["rows"] += variant_rows
            runner.add_speedups(result["rows"])
            result["rows"].sort(key=lambda r: _row_order(r, labels))
            result["settings"]["variants"] = True
    except KeyboardInterrupt as exc:
        # Ctrl-C: the rows measured so far, as a table on stdout (never a partial --out file);
        # main() then says "interrupted" and exits 130
        partial = result if result is not None else getattr(exc, "result", None)
        if partial is not None and partial["rows"]:
            report.print_table(partial, console)
        raise
    return _deliver(result, args, console, report.print_table, report.render, [])


def _write(text: str, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _looked_for(specs: list[str] | None, result: dict[str, Any]) -> list[dict[str, Any]]:
    """The engines other than software this run looked for: each found or not, and why not.

    Without ``--engines`` these are every engine the default provider probed (those absent get
    no rows, so this is where their reasons are kept); with it, the engines named.
    """
    if specs is None:
        caps = default_provider().capabilities
        found = [{"name": n, "available": c.available, "reason": c.reason} for n, c in caps.items()]
    else:
        found = [
            {"name": e["name"], "available": e["available"], "reason": e["reason"]}
            for e in result["machine"].get("engines", [])
        ]
    return [e for e in found if e["name"] != "software"]


def _row_order(row: dict[str, Any], labels: list[str]) -> tuple:
    """Rows of one case together, by block, software before its variants before engines."""
    label = f"{row['algorithm']} {row['operation']}"
    engine = row["engine"]
    rank = 0 if engine == "software" else 1 if engine.startswith("software:") else 2
    return (labels.index(label) if label in labels else len(labels), row["block"] or 0, rank)


def _bench_tls13(args: argparse.Namespace, console: Console) -> int:
    from cryptoffload.tools.bench import machine, report, tls13
    from cryptoffload.tools.bench.progress import progress_on_stderr

    engines = _engines_to_measure(args.engines)
    total = (len(engines) + 1) * (4 + len(tls13.RECORD_SIZES))
    with progress_on_stderr(total, args.quiet) as step:
        result = tls13.run(engines, args.time, args.trials, policy=_row_policy(args), progress=step)
    result["machine"] = machine.describe()
    if args.format == "json" or args.out:
        _emit(json.dumps(result, indent=2) + "\n", args.out)
        if args.format == "json":
            return 0
    report.print_tls13(result, console)
    return 0


def _bench_tls(args: argparse.Namespace, console: Console) -> int:
    from cryptoffload.tools.bench import tls_report, tls_view
    from cryptoffload.tools.bench.progress import progress_on_stderr
    from cryptoffload.tools.bench.runner import Interrupted

    versions = args.versions or list(tls_options.VERSIONS)
    records = args.records or list(tls_options.RECORDS)
    paths = args.paths or list(tls_options.PATHS)
    plans = tls_view.plan(versions, records, paths)
    try:
        with progress_on_stderr(len(plans) * (1 + args.trials), args.quiet) as step:
            result = tls_view.run(
                versions, records, paths, args.transfer or tls_options.TRANSFER, args.trials, step
            )
    except Interrupted as exc:
        if exc.result is not None and exc.rows:
            tls_report.print_table(exc.result, console)
        raise
    failures = tls_report.failure_lines(result)
    return _deliver(result, args, console, tls_report.print_table, tls_report.render, failures)


def _deliver(
    result: dict[str, Any],
    args: argparse.Namespace,
    console: Console,
    print_table: Callable[[dict[str, Any], Console], None],
    render: Callable[[dict[str, Any], str], str],
    failures: list[str],
) -> int:
    """A bench result as ``--format`` and ``--out`` ask (the table also saved as JSON with
    ``--out``); the exit status, 1 with each failure said."""
    from cryptoffload.tools.bench import report

    if args.format == "table":
        print_table(result, console)
        if args.out:
            try:
                _write(report.json_text(result), args.out)
            except OSError as exc:
                failures.append(f"--out {args.out}: {exc.strerror or exc}; the table is above")
    else:
        try:
            _emit(render(result, args.format), args.out)
        except WriteFailed as exc:
            failures.append(str(exc))
    return _report_failures(failures, "bench")


def cmd_sweep(args: argparse.Namespace, console: Console) -> int:
    """``sweep``: bulk throughput against buffer size, and where offload starts to pay."""
    from cryptoffload.tools.bench import cases, report, sweep
    from cryptoffload.tools.bench.progress import progress_on_stderr

    selected = (
        [c for c in cases.select(args.algs) if c.bulk]
        if args.algs
        else cases.select(
            ["aes-128-gcm encrypt", "aes-128-cbc encrypt", "sha256 digest", "sha384 digest"]
        )
    )
    if not selected:
        raise ValueError("sweep measures bulk algorithms (ciphers, hashes, MACs); none selected")
    _check_outputs(args)
    engines = _engines_to_measure(args.engines)
    total = len(selected) * len(args.sizes) * (len(engines) + 1)
    with progress_on_stderr(total, args.quiet) as step:
        result = sweep.run(
            selected,
            engines,
            args.sizes,
            args.time,
            args.trials,
            policy=_row_policy(args),
            progress=step,
        )
    failures: list[str] = []
    plotted = False
    if args.plot:
        from cryptoffload.tools.bench import plot

        try:
            plot.plot_sweep(result, args.plot, check_plot_path(args.plot))
            plotted = True
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            failures.append(f"--plot {args.plot}: not written: {reason}")
    try:
        if args.format == "json" or (args.format == "table" and args.out):
            _emit(report.json_text(result), args.out)
            if args.format == "json":
                return _report_failures(failures, "sweep")
        elif args.format in ("md", "csv"):
            _emit(
                report.render({**result, "machine": {}, "settings": {"cpu": False}}, args.format)
                if args.format == "csv"
                else report.sweep_markdown(result),
                args.out,
            )
            return _report_failures(failures, "sweep")
    except WriteFailed as exc:
        failures.append(str(exc))
        if args.format != "table":
            return _report_failures(failures, "sweep")
    report.print_sweep(result, console)
    if plotted:
        console.print(f"plot written to {args.plot}")
    return _report_failures(failures, "sweep")


def cmd_compare(args: argparse.Namespace, console: Console) -> int:
    """``compare``: row-by-row changes between two saved bench runs."""
    from cryptoffload.tools.bench import compare

    names = (args.before, args.after)
    before, after = (compare.load_run(path) for path in names)
    changes = compare.compare(before, after)
    if not changes:
        raise ValueError(compare.nothing_in_common(before, after, *names))
    left = compare.unmatched(before, after)
    if args.json:
        print(json.dumps(changes, indent=2, allow_nan=False))
        for line in compare.leftover_lines(left, *names):
            print(f"cryptoffload compare: {line}", file=sys.stderr)
    else:
        compare.print_comparison(changes, console, left, names)
    return 0
