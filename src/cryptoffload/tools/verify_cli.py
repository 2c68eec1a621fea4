"""The `cryptoffload verify` command: its options, the table and the JSON report."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from cryptoffload.tools.bench.cli import _nonempty_list, _seconds, _trials
from cryptoffload.tools.verify import times

#: Below this share of a core in software runs, the machine is too busy for CPU readings.
BUSY_SHARE = 0.8


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``verify``; the caller adds the engine options (``--engine``, ``--engines``)."""
    p = subparsers.add_parser(
        "verify",
        help="prove each engine does the work it claims, and gets it right",
        description="For each engine (named, else every engine found, with the hardware drivers "
        "the kernel lists but does not choose) and each algorithm it claims: the offload counters "
        "of a small fixed workload, a negative control with the engine unregistered (its "
        "counters must not move; wall and CPU time against the noise band), every engine result "
        "redone in software, the CPU signature and the driver binding. Exit status 0 when every "
        "algorithm is proven offloaded and correct, 1 otherwise (an engine named that is not "
        "available fails, with its reason), 2 for usage errors.",
    )
    p.add_argument(
        "--algs",
        type=_nonempty_list("algorithm names or globs"),
        metavar="LIST",
        help="comma-separated algorithm names or globs (default: every algorithm claimed)",
    )
    p.add_argument(
        "--trials",
        type=_trials,
        default=5,
        metavar="N",
        help="timed runs a side for the negative control (default 5; 4 or more to compare)",
    )
    p.add_argument(
        "--time",
        type=_seconds,
        default=0.02,
        metavar="S",
        help="least seconds per timed run: the workload is repeated to fill it (default 0.02)",
    )
    p.add_argument(
        "--tls",
        action="store_true",
        help="instead of the engines: prove that the kernel does the records of ssl's TLS with "
        "kTLS (loopback TLS 1.2 and 1.3, with and without it: the kernel's record state, "
        "tls_stat, the driver's users, the bytes, CPU per MiB)",
    )
    p.add_argument(
        "--size",
        type=_size,
        default=4 << 20,
        metavar="BYTES",
        help="with --tls: bytes sent over each connection (default 4194304; k, m suffixes)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_verify)
    return p


def cmd_verify(args: argparse.Namespace, console: Console) -> int:
    """``verify``: the checks, a table (or JSON), exit status 0 only when all passed."""
    from cryptoffload.tools import targets, verify
    from cryptoffload.tools.bench.progress import progress_on_stderr

    if args.tls:
        return cmd_verify_tls(args, console)
    verify.check_patterns(args.algs)
    found = targets.resolve(args.specs)
    settings = verify.Settings(trials=args.trials, trial_seconds=args.time)
    quiet = args.quiet or args.json
    with progress_on_stderr(verify.steps(found, args.algs), quiet) as step:
        report = verify.run(found, args.algs, settings, progress=step)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_report(report, console)
    return 0 if report["passed"] else 1


def _size(text: str) -> int:
    """A byte count: digits, with an optional k or m (KiB, MiB)."""
    scale = {"k": 1 << 10, "m": 1 << 20}.get(text[-1:].lower(), 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit() or not 0 < int(digits) * scale <= 1 << 30:
        raise argparse.ArgumentTypeError(
            f"expected a size from 1 byte to 1g such as 4m or 65536, got {text!r}"
        )
    return int(digits) * scale


def cmd_verify_tls(args: argparse.Namespace, console: Console) -> int:
    """``verify --tls``: the kernel's proof per TLS version; exit status 0 only when proven."""
    from cryptoffload.tools import verify_tls

    if args.specs or args.algs:
        print(
            "cryptoffload verify: --tls proves the kernel's TLS; it takes no --engines or --algs",
            file=sys.stderr,
        )
        return 2
    report = verify_tls.run(args.size)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_tls_report(report, console)
    return 0 if report["passed"] else 1


def _ends_cell(v: dict[str, Any]) -> str:
    lines = []
    for end in v["ends"]:
        sides = (("send", end["kernel_tx"]), ("receive", end["kernel_rx"]))
        directions = [d for d, on in sides if on]
        text = " and ".join(directions) if directions else f"neither ({end.get('reason')})"
        lines.append(f"{end['side']}: {text}")
    return "\n".join(lines)


def print_tls_report(report: dict[str, Any], console: Console) -> None:
    """``verify --tls``'s table, the problems found and the verdict."""
    table = Table(title=f"verify --tls: {report['openssl']}, {report['size']} bytes a connection")
    for column in (
        "version",
        "in the kernel",
        "tls_stat",
        "driver (users added)",
        "bytes",
        "user CPU ms/MiB kTLS : user space",
        "result",
    ):
        table.add_column(column, overflow="fold")
    for v in report["versions"]:
        driver = v["driver"]
        drv = "-"
        if driver:
            kind = "hardware" if driver["hardware"] else "CPU"
            drv = f"{driver['driver']} ({kind}, priority {driver['priority']})"
            drv += f"\n+{v['driver_users_added']} users"
        cpu = v["cpu_ms_per_mib"]
        ratio = cpu["user_ratio"]
        table.add_row(
            f"{v['version']}\n{v['suite']}",
            _ends_cell(v),
            ", ".join(f"{k} +{n}" for k, n in v["tls_stat"].items()) or "nothing moved",
            drv,
            "intact" if v["intact"] else "[bold red]differ[/]",
            f"{cpu['ktls']['user']:.1f} : {cpu['user_space']['user']:.1f}"
            + (f"\n= {ratio:.2f}" if ratio is not None else ""),
            "[green]proven[/]" if v["passed"] else "[bold red]FAIL[/]",
        )
    console.print(table)
    for v in report["versions"]:
        for problem in v["problems"]:
            console.print(f"{v['version']}: {problem}", markup=False)
        if not v["receive_expected"]:
            console.print(
                f"{v['version']}: receive stays in user space: {report['openssl']} does no kTLS "
                "receive for TLS 1.3 (OpenSSL 3.2 and later do)",
                markup=False,
            )
    if not report["tls_module"]:
        console.print(
            "this kernel has no kTLS (no /proc/net/tls_stat: CONFIG_TLS off, or the tls "
            "module not loadable)",
            markup=False,
        )
    if report["passed"]:
        console.print("[green]verified[/]: the kernel does the records of ssl's TLS with kTLS")
    else:
        console.print("[bold red]not verified[/]: the kernel did not do the records")


def _offload_cell(a: dict[str, Any]) -> str:
    o = a.get("offload")
    if o is None:
        return f"[red]{a['status']}[/]"
    text = f"{o['ops']}/{o['offered']} ops, {o['bytes']} B"
    declined = ", ".join(f"{r} x{n}" for r, n in o["declined"].items())
    if declined:
        text += f"\ndeclined: {declined}"
    if o["faults"]:
        text += f"\n[red]faults: {o['faults']}[/]"
    style = {"offloaded": "green", "partly offloaded": "yellow"}.get(a["status"], "red")
    return f"[{style}]{a['status']}[/]\n{text}"


def _crosscheck_cell(a: dict[str, Any]) -> str:
    c = a.get("crosscheck")
    if c is None:
        return "-"
    if c["mismatches"]:
        return f"[bold red]{len(c['mismatches'])} wrong[/] of {c['compared']}"
    parts = [f"[green]{c['agreed']} agree[/]"] if c["agreed"] or not c["unchecked"] else []
    if c["unchecked"]:
        parts.append(f"{c['unchecked']} random (length checked)")
    return ", ".join(parts)


def _control_cell(a: dict[str, Any]) -> str:
    c = a.get("control")
    if c is None:
        return "-"
    head = "[green]counters still[/]" if c["passed"] else "[bold red]counters moved[/]"
    return f"{head}\n{_timing('wall', c['wall'])}\n{_timing('CPU', c['cpu'])}"


def _timing(what: str, t: dict[str, Any]) -> str:
    """One line of the engine run's time against the control's."""
    if "change" not in t:
        return f"[dim]{what}: too short to measure[/]"
    change = times(t["change"])
    if t["verdict"] == "within noise":
        return f"{what}: [yellow]no measurable effect[/] ({change}, ±{t['band']:.0%})"
    if t["verdict"] == "beyond noise":
        return f"{what}: {change} (noise ±{t['band']:.0%})"
    return f"{what}: {change} (too few trials)"


def _cpu_cell(a: dict[str, Any]) -> str:
    c = a.get("cpu")
    if c is None:
        return "-"
    wall = c["wall"] or 0.0
    line = f"user {c['user']:.3f} sys {c['sys']:.3f}\nwall {wall:.3f} s"
    reading = c["reading"] if c["witness"] else f"[dim]{c['reading']} (user-space driver)[/]"
    return f"{line}\n{reading}"


def _binding_cell(a: dict[str, Any]) -> str:
    b = a["binding"]
    style = {"hardware": "green", "software": "yellow", "model": "cyan"}.get(b["kind"], "dim")
    text = f"[{style}]{b['kind']}[/]"
    if b["driver"]:
        text += f"\n{b['driver']}"
    if b["flag"]:
        text += "\n[bold red]flagged[/]"
    return text


def print_report(report: dict[str, Any], console: Console) -> None:
    """The verify report as a table per engine, the findings and the verdict."""
    for engine in report["engines"]:
        title = f"verify: {engine['name']}"
        if engine["origin"] and engine["origin"] != "found":
            title += f" ({engine['origin']})"
        if not engine["algorithms"]:
            for problem in engine["problems"]:
                console.print(f"[bold red]FAIL[/] {problem}")
            continue
        table = Table(title=title)
        columns = ("algorithm", "offload", "cross-check", "negative control", "CPU signature")
        for column in (*columns, "binding", "result"):
            table.add_column(column, overflow="fold")
        for a in engine["algorithms"]:
            result = "[green]pass[/]" if a["passed"] else "[bold red]FAIL[/]"
            table.add_row(
                a["algorithm"],
                _offload_cell(a),
                _crosscheck_cell(a),
                _control_cell(a),
                _cpu_cell(a),
                _binding_cell(a),
                result,
            )
        console.print(table)
        for a in engine["algorithms"]:
            for problem in a["problems"]:
                console.print(f"{engine['name']} {a['algorithm']}: {problem}", markup=False)
        share = engine.get("software_cpu_share")
        if share is not None and share < BUSY_SHARE:
            console.print(
                f"note: software runs got as little as {share:.0%} of a core: this machine is "
                "busy, and CPU readings and timings are unreliable",
                markup=False,
            )
        quiet = [
            a["algorithm"]
            for a in engine["algorithms"]
            if a.get("control", {}).get("wall", {}).get("verdict") == "within noise"
        ]
        if quiet:
            console.print(
                f"finding: no measurable effect on wall time for {len(quiet)} of "
                f"{len(engine['algorithms'])} algorithms on {engine['name']} "
                f"({_short(quiet)}): the engine runs as fast as software there; the counters, "
                "not the timing, show who did the work",
                markup=False,
            )
    for name, why in report["not_found"].items():
        console.print(f"not found here: {name}: {why}", markup=False, highlight=False)
    for problem in report["problems"]:
        console.print(f"[bold red]FAIL[/] {problem}")
    checked, failed = report["checked"], report["failed"]
    if report["passed"]:
        console.print(f"[green]verified[/]: {checked} algorithm(s) offloaded and correct")
    else:
        console.print(f"[bold red]not verified[/]: {failed} failure(s), {checked} checked")


def _short(names: list[str], most: int = 6) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")
