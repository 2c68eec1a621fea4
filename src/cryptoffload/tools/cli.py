"""The `cryptoffload` command: engines, selftest, bench, sweep, compare."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from cryptoffload import __version__
from cryptoffload.caam.cli import add_parser as add_caam_parser
from cryptoffload.engines.base import Capabilities
from cryptoffload.errors import EngineError
from cryptoffload.provider import Provider, default_provider


def _provider(specs: Sequence[str] | None) -> Provider:
    return Provider(list(specs)) if specs else default_provider()


def _engine_rows(provider: Provider) -> list[dict[str, Any]]:
    rows = []
    for name, caps in provider.capabilities.items():
        rows.append(_caps_row(name, caps))
    return rows


def _caps_row(name: str, caps: Capabilities) -> dict[str, Any]:
    return {
        "name": name,
        "available": caps.available,
        "reason": caps.reason,
        "algorithms": sorted(caps.algorithms),
        "min_size": dict(caps.min_size),
        "detail": {k: v for k, v in caps.detail.items()},
    }


def cmd_engines(args: argparse.Namespace, console: Console) -> int:
    provider = _provider(args.engine)
    rows = _engine_rows(provider)
    if args.json:
        print(json.dumps({"engines": rows, "policy": provider.policy.to_dict()}, indent=2))
        return 0
    table = Table(title="crypto engines on this machine (in priority order)")
    for column in ("engine", "status", "claims", "detail"):
        table.add_column(column, overflow="fold")
    for row in rows:
        status = (
            "[green]available[/]" if row["available"] else f"[red]not available[/]: {row['reason']}"
        )
        claims = f"{len(row['algorithms'])} algorithms" if row["algorithms"] else "-"
        detail = "\n".join(
            f"{k}: {v}" for k, v in row["detail"].items() if k not in ("algorithms", "skipped")
        )
        table.add_row(row["name"], status, claims, detail)
    console.print(table)
    for row in rows:
        _print_bindings(row, console)
    if args.verbose:
        for row in rows:
            if row["algorithms"]:
                console.print(f"[bold]{row['name']}[/] claims: " + ", ".join(row["algorithms"]))
    offloaders = [r for r in rows if r["name"] != "software" and r["available"]]
    if not offloaders:
        console.print(
            "No crypto engine other than software is available here: every operation runs in "
            "OpenSSL on the CPU."
        )
    return 0


def _print_bindings(row: dict[str, Any], console: Console) -> None:
    """Per algorithm: the kernel driver an engine binds, its priority, hardware or software."""
    bound, skipped = row["detail"].get("algorithms"), row["detail"].get("skipped")
    if not bound and not skipped:
        return
    table = Table(title=f"{row['name']}: algorithm bindings")
    for column in ("algorithm", "kernel name", "driver", "priority", "kind"):
        table.add_column(column)
    for alg, b in sorted((bound or {}).items()):
        kind = "[green]hardware[/]" if b["hardware"] else "software"
        table.add_row(alg, b["kernel name"], b["driver"], str(b["priority"]), kind)
    for alg, reason in sorted((skipped or {}).items()):
        table.add_row(alg, "", "", "", f"[dim]skipped: {reason}[/]")
    console.print(table)


def cmd_selftest(args: argparse.Namespace, console: Console) -> int:
    from cryptoffload.tools import selftest

    provider = _provider(args.engine)
    engines = [e for e in provider.engines if e.name != "software"]
    with console.status("running known-answer tests...") if not args.json else _nothing():
        results = selftest.run(engines)
    failed = [r for r in results if r.failed]
    if args.json:
        print(json.dumps({"results": [vars(r) for r in results], "failed": len(failed)}, indent=2))
        return 1 if failed else 0
    table = Table(title="self-test: known answers through each engine")
    for column in ("engine", "algorithm", "result", "detail"):
        table.add_column(column, overflow="fold")
    style = {"pass": "green", "FAIL": "bold red", "fault": "red", "declined": "yellow"}
    for r in results:
        table.add_row(r.engine, r.algorithm, f"[{style[r.status]}]{r.status}[/]", r.detail)
    console.print(table)
    for name, reason in provider.unavailable.items():
        console.print(f"engine {name} not tested: {reason}")
    verdict = f"{len(failed)} failed" if failed else "all passed"
    console.print(f"{len(results)} checks on {len(engines) + 1} engine(s): {verdict}")
    return 1 if failed else 0


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_BLOCKS = {"1k": 1024, "4k": 4096, "16k": 16384, "64k": 65536, "1m": 1 << 20}


def _size(text: str) -> int:
    value = _BLOCKS.get(text.lower())
    if value is None:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"block size must be one of {', '.join(_BLOCKS)} or a number of bytes, got {text!r}"
            ) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"block size must be positive, got {value}")
    return value


def _csv(text: str) -> list[str]:
    """Comma-separated items; commas inside parentheses stay, so a kernel template driver
    such as ``afalg:gcm_base(ctr(aes-generic),ghash-generic)`` is one item."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def _bench_engines(specs: list[str] | None) -> list[Any]:
    """Engines for bench rows: those named (software is always measured), else the ones found."""
    from cryptoffload import engines as registry

    if specs is None:
        provider = default_provider()
        return [e for e in provider.engines if e.name != "software"]
    return [registry.from_spec(s) for s in specs if s != "software"]


def _emit(text: str, out: str | None) -> None:
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def cmd_bench(args: argparse.Namespace, console: Console) -> int:
    from cryptoffload.tools.bench import cases, report, runner

    if args.workload == "tls13":
        return _bench_tls13(args, console)
    block = 1024 if args.embedded else args.block
    selected = cases.select(args.algs)
    engines = _bench_engines(args.engines)
    err = Console(stderr=True)
    with (
        _quiet_fallback_warnings(),
        _progress(err, len(selected) * (len(engines) + 1), args.quiet) as step,
    ):
        result = runner.run(
            selected,
            engines,
            block,
            args.time,
            args.trials,
            with_cpu=args.cpu,
            policy=default_provider().policy if args.use_policy else None,
            progress=step,
        )
    if args.variants:
        from cryptoffload.tools.bench import variants

        if not args.quiet:
            err.print("running software variants with crypto extensions masked...")
        labels = [c.label for c in selected]
        result["rows"] += variants.run_variant(labels, block, args.time, args.trials)
        runner.add_speedups(result["rows"])
        result["rows"].sort(key=lambda r: _row_order(r, labels))
        result["settings"]["variants"] = True
    if args.format == "table":
        if args.out:
            _emit(report.json_text(result), args.out)
        report.print_table(result, console)
    else:
        _emit(report.render(result, args.format), args.out)
    return 0


def _bench_tls13(args: argparse.Namespace, console: Console) -> int:
    from cryptoffload.tools.bench import machine, tls13

    engines = _bench_engines(args.engines)
    err = Console(stderr=True)
    total = (len(engines) + 1) * (4 + len(tls13.RECORD_SIZES))
    with _quiet_fallback_warnings(), _progress(err, total, args.quiet) as step:
        result = tls13.run(
            engines,
            args.time,
            args.trials,
            policy=default_provider().policy if args.use_policy else None,
            progress=step,
        )
    result["machine"] = machine.describe()
    if args.format == "json" or args.out:
        _emit(json.dumps(result, indent=2) + "\n", args.out)
        if args.format == "json":
            return 0
    table = Table(title="TLS 1.3 server view (estimated from measured pieces)")
    for col in (
        "engine",
        "handshakes/s ECDSA-P256",
        "handshakes/s RSA-2048",
        "records 1400 B MiB/s",
        "records 16 KiB MiB/s",
        "offloaded ops",
    ):
        table.add_column(col, justify="left" if col in ("engine", "offloaded ops") else "right")
    for e in result["engines"]:
        hs, rec = e["handshakes_per_s"], e["records_mib_per_s"]
        offloaded = ", ".join(f"{k} x{v}" for k, v in e["offloaded_ops"].items()) or (
            "-" if e["engine"] == "software" else "none"
        )
        table.add_row(
            e["engine"],
            f"{hs['ecdhe-p256+ecdsa-p256']:,.1f}",
            f"{hs['ecdhe-p256+rsa-2048']:,.1f}",
            f"{rec['1400']:,.1f}",
            f"{rec['16384']:,.1f}",
            offloaded,
        )
    console.print(table)
    console.print(
        "handshake = ECDHE P-256 keygen + agree, one signature, "
        f"{tls13.KEY_SCHEDULE_HMACS} HMAC-SHA256 (key schedule); server side, one core"
    )
    return 0


def _row_order(row: dict[str, Any], labels: list[str]) -> tuple:
    label = f"{row['algorithm']} {row['operation']}"
    engine = row["engine"]
    rank = 0 if engine == "software" else 1 if engine.startswith("software:") else 2
    return (labels.index(label) if label in labels else len(labels), row["block"] or 0, rank)


class _quiet_fallback_warnings:
    """The bench reports declines per row; the library's one-line warning would interleave."""

    def __enter__(self) -> None:
        import logging

        self._logger = logging.getLogger("cryptoffload")
        self._level = self._logger.level
        self._logger.setLevel(logging.ERROR)

    def __exit__(self, *exc: object) -> None:
        self._logger.setLevel(self._level)


class _progress:
    def __init__(self, console: Console, total: int, quiet: bool) -> None:
        self._console, self._total, self._quiet = console, total, quiet

    def __enter__(self):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        if self._quiet:
            return lambda description: None
        self._bar = Progress(
            TextColumn("{task.description:<44}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self._console,
            transient=True,
        )
        self._bar.start()
        task = self._bar.add_task("starting", total=self._total)
        started = [False]

        def step(description: str) -> None:
            if started[0]:
                self._bar.advance(task)
            started[0] = True
            self._bar.update(task, description=description)

        return step

    def __exit__(self, *exc: object) -> None:
        if not self._quiet:
            self._bar.stop()


def _sizes(text: str) -> list[int]:
    return [_size(part) for part in _csv(text)]


def cmd_sweep(args: argparse.Namespace, console: Console) -> int:
    from cryptoffload.tools.bench import cases, report, sweep

    selected = (
        [c for c in cases.select(args.algs) if c.bulk]
        if args.algs
        else [
            c
            for c in cases.select(
                ["aes-128-gcm encrypt", "aes-128-cbc encrypt", "sha256 digest", "sha384 digest"]
            )
        ]
    )
    if not selected:
        raise ValueError("sweep measures bulk algorithms (ciphers, hashes, MACs); none selected")
    engines = _bench_engines(args.engines)
    err = Console(stderr=True)
    total = len(selected) * len(args.sizes) * (len(engines) + 1)
    with _quiet_fallback_warnings(), _progress(err, total, args.quiet) as step:
        result = sweep.run(
            selected,
            engines,
            args.sizes,
            args.time,
            args.trials,
            policy=default_provider().policy if args.use_policy else None,
            progress=step,
        )
    if args.plot:
        from cryptoffload.tools.bench.plot import plot_sweep

        plot_sweep(result, args.plot)
    if args.format == "json" or (args.format == "table" and args.out):
        _emit(report.json_text(result), args.out)
        if args.format == "json":
            return 0
    elif args.format in ("md", "csv"):
        _emit(
            report.render({**result, "machine": {}, "settings": {"cpu": False}}, args.format)
            if args.format == "csv"
            else report.sweep_markdown(result),
            args.out,
        )
        return 0
    report.print_sweep(result, console)
    if args.plot:
        console.print(f"plot written to {args.plot}")
    return 0


def cmd_compare(args: argparse.Namespace, console: Console) -> int:
    from cryptoffload.tools.bench import report

    runs = []
    for path in (args.before, args.after):
        with open(path, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path} is not JSON: {exc}") from None
        if not isinstance(data, dict) or "rows" not in data:
            raise ValueError(f"{path} is not a saved bench run (no 'rows')")
        runs.append(data)
    changes = report.compare(*runs)
    if args.json:
        print(json.dumps(changes, indent=2))
    else:
        report.print_comparison(changes, console)
    if not changes:
        console.print("no rows in common between the two runs")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cryptoffload",
        description="One crypto API over the machine's crypto engines: see what is offloaded.",
    )
    parser.add_argument("--version", action="version", version=f"cryptoffload {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    engine_help = "engine spec to use instead of the ones found (repeatable), e.g. software"
    p = sub.add_parser(
        "engines", help="list the engines found, why others are not, what they claim"
    )
    p.add_argument("--engine", action="append", metavar="SPEC", help=engine_help)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("-v", "--verbose", action="store_true", help="list every algorithm claimed")
    p.set_defaults(func=cmd_engines)

    p = sub.add_parser("selftest", help="known-answer tests through every engine found")
    p.add_argument("--engine", action="append", metavar="SPEC", help=engine_help)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_selftest)

    p = sub.add_parser("bench", help="software and engine rows side by side (the main job)")
    p.add_argument(
        "--algs",
        type=_csv,
        metavar="LIST",
        help="comma-separated algorithm names or globs (default: the articles' set)",
    )
    p.add_argument(
        "--engines",
        type=_csv,
        metavar="LIST",
        help="comma-separated engine specs (default: every engine found)",
    )
    p.add_argument(
        "--block",
        type=_size,
        default=16384,
        metavar="SIZE",
        help="bulk buffer size: 1k, 4k, 16k (default), 64k, 1m or bytes",
    )
    p.add_argument(
        "--embedded", action="store_true", help="1 KiB blocks, like the embedded benchmark"
    )
    p.add_argument(
        "--time", type=float, default=0.25, metavar="S", help="seconds per trial (default 0.25)"
    )
    p.add_argument(
        "--trials",
        type=int,
        default=3,
        metavar="N",
        help="trials per row; the median is shown (default 3)",
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
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("sweep", help="throughput against buffer size, and the crossover")
    p.add_argument(
        "--sizes",
        type=_sizes,
        default=[64, 256, 1400, 16384],
        metavar="LIST",
        help="comma-separated sizes in bytes (or 1k, 16k...); default 64,256,1400,16384",
    )
    p.add_argument(
        "--algs",
        type=_csv,
        metavar="LIST",
        help="bulk algorithms (default: aes-128-gcm, aes-128-cbc, sha256, sha384)",
    )
    p.add_argument("--engines", type=_csv, metavar="LIST", help="engine specs (default: found)")
    p.add_argument("--time", type=float, default=0.2, metavar="S", help="seconds per trial")
    p.add_argument("--trials", type=int, default=3, metavar="N", help="trials per point")
    p.add_argument("--use-policy", action="store_true", help="apply the configured policy")
    p.add_argument("--plot", metavar="FILE.png", help="draw throughput against size")
    p.add_argument("--format", choices=("table", "md", "csv", "json"), default="table")
    p.add_argument("--out", metavar="FILE", help="write the report here")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("compare", help="row-by-row changes between two saved bench runs")
    p.add_argument("before", help="bench JSON (from --format json or --out)")
    p.add_argument("after", help="bench JSON to compare with it")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_compare)

    add_caam_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `cryptoffload` command; returns the exit status."""
    args = build_parser().parse_args(argv)
    console = Console()
    if not console.is_terminal:
        console = Console(width=200)  # redirected output: keep rows on one line
    try:
        return args.func(args, console)
    except (EngineError, ValueError, OSError) as exc:
        print(f"cryptoffload {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
