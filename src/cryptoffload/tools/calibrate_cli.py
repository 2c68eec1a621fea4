"""The `cryptoffload calibrate` command: its options, the table, the policy file written."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from cryptoffload.tools.bench.cli import _block_size, _nonempty_list, _seconds, _trials


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``calibrate``; the caller adds the engine options (``--engine``, ``--engines``)."""
    p = subparsers.add_parser(
        "calibrate",
        help="measure where each engine pays and write the policy that routes by it",
        description="For each engine (named, else every engine found, with the hardware drivers "
        "the kernel lists but does not choose) and algorithm it claims: engine and software "
        "throughput side by side in paired trials at sizes found by a search (bisection towards "
        "where the chosen side changes, down to one step of the square root of 2). The engine "
        "is chosen at a size only when a sign test over the paired trials says it is faster "
        "(p <= 0.05), by more than 5%, and a neighbouring size agrees (hysteresis); otherwise "
        "software "
        "('no significant gain'). With --write, a policy file (TOML) giving each engine its "
        "minimum (and maximum) sizes, excluding it where it never wins or the gain is not "
        "significant, with the figures and each decision's confidence. With --check PATH, the "
        "decisions of a written policy are measured again: exit 0 when all still hold, 1 when "
        "some do not. Exit status 1 when an engine named is not available or claims none of "
        "the algorithms asked, 2 for usage errors.",
    )
    p.add_argument(
        "--algs",
        type=_nonempty_list("algorithm names or globs"),
        metavar="LIST",
        help="comma-separated algorithm names or globs (default: every algorithm claimed)",
    )
    p.add_argument("--write", metavar="PATH", help="write the policy (TOML) here")
    p.add_argument(
        "--check",
        metavar="PATH",
        help="re-measure the decisions of the policy at PATH and say whether each still holds",
    )
    p.add_argument(
        "--max-size",
        type=_block_size,
        default=65536,
        metavar="SIZE",
        help="largest size searched (default 64k; the smallest is 16 bytes)",
    )
    p.add_argument(
        "--time",
        type=_seconds,
        default=None,
        metavar="S",
        help="seconds per trial (default 0.02; with --check, the policy's)",
    )
    p.add_argument(
        "--trials",
        type=_trials,
        default=None,
        metavar="N",
        help="paired trials per size, at least 5 (default 8; with --check, the policy's)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_calibrate)
    return p


def cmd_calibrate(args: argparse.Namespace, console: Console) -> int:
    """``calibrate``: measure, print (or JSON), write the policy with ``--write``."""
    from cryptoffload.tools import calibrate, targets, verify
    from cryptoffload.tools.bench.progress import progress_on_stderr
    from cryptoffload.tools.calibrate_stats import fewest_pairs

    verify.check_patterns(args.algs)
    if args.trials is not None and args.trials < fewest_pairs():
        raise ValueError(
            f"--trials must be at least {fewest_pairs()}: with {args.trials} paired trials the "
            "sign test can never reach p <= 0.05, so no size could be decided for the engine"
        )
    if args.check:
        return cmd_check(args, console)
    if args.max_size < 32:
        raise ValueError(f"--max-size must be at least 32 bytes, got {args.max_size}")
    base = calibrate.load_base(args.write) if args.write else None
    found = targets.resolve(args.specs)
    settings = calibrate.Settings(
        high=args.max_size,
        seconds=args.time if args.time is not None else calibrate.Settings.seconds,
        trials=args.trials if args.trials is not None else calibrate.Settings.trials,
    )
    quiet = args.quiet or args.json
    with progress_on_stderr(calibrate.steps(found, args.algs), quiet) as step:
        report = calibrate.run(found, args.algs, settings, progress=step)
    missing = [e for e in report["engines"] if not e["available"]]
    claim_none = [
        e for e in report["engines"] if e["available"] and not e["results"] and not e["skipped"]
    ]
    if args.write and any(e["available"] for e in report["engines"]):
        policy = calibrate.policy_from(report, base)
        command = "cryptoffload " + shlex.join(sys.argv[1:] if sys.argv[1:] else ["calibrate"])
        calibrate.write(policy, args.write, command)
        report["written"] = args.write
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        for engine in claim_none:
            print(f"cryptoffload calibrate: {_claims_none(engine, args.algs)}", file=sys.stderr)
    else:
        print_report(report, console)
        for engine in claim_none:
            console.print(f"[bold red]FAIL[/] {_claims_none(engine, args.algs)}", highlight=False)
    return 1 if missing or claim_none or not report["engines"] else 0


def cmd_check(args: argparse.Namespace, console: Console) -> int:
    """``calibrate --check PATH``: re-measure, print the table (or JSON), 0 if all hold."""
    from cryptoffload.core.policy import Policy
    from cryptoffload.tools import calibrate_check
    from cryptoffload.tools.bench.progress import progress_on_stderr

    if args.write:
        raise ValueError("--check and --write do not go together: check a policy, or write one")
    policy = Policy.load(args.check)
    saved = calibrate_check.recorded(policy)
    settings = calibrate_check.settings_for(policy, args.time, args.trials)
    steps = sum(len(e["results"]) for e in saved if not args.specs or e["name"] in args.specs)
    with progress_on_stderr(steps, args.quiet or args.json) as step:
        report = calibrate_check.check(policy, args.specs, args.algs, settings, progress=step)
    report["policy"] = args.check
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_check(report, console)
    return 0 if report["holds"] else 1


def print_check(report: dict[str, Any], console: Console) -> None:
    """One table per engine: per algorithm the policy's routing, the sizes measured again (the
    routing now, ratio, noise, sign-test p) and whether the decision still holds."""
    for engine in report["engines"]:
        if not engine["available"]:
            console.print(
                f"[bold red]FAIL[/] {engine['name']} is not available: {engine['reason']}",
                highlight=False,
            )
            continue
        table = Table(title=f"calibrate --check {report['policy']}: {engine['name']}")
        for column in ("algorithm", "policy", "measured again (size: now, ratio, p)", "holds"):
            table.add_column(column, overflow="fold")
        for r in engine["results"]:
            cells = []
            for row in r["sizes"]:
                where = _size(row["size"]) if row["size"] else "-"
                mark = "" if row["holds"] else f"  <- {row['why']}"
                cells.append(
                    f"{where}: {row['now']} {row['ratio']:.3g}x ±{row['band']:.0%} "
                    f"p={row['p']:.3g}{mark}"
                )
            policy = r["policy"]
            if policy != "exclude":
                policy = f"engine from {_size(policy['min_size']) if policy['min_size'] else 0}"
                if r["policy"]["max_size"] is not None:
                    policy += f" up to {_size(r['policy']['max_size'])}"
            verdict = "holds" if r["holds"] else "[bold red]no longer holds[/]"
            table.add_row(r["algorithm"], policy, "\n".join(cells), verdict)
        console.print(table)
    held = sum(r["holds"] for e in report["engines"] for r in e["results"])
    total = sum(len(e["results"]) for e in report["engines"])
    word = "all hold" if report["holds"] else "some no longer hold"
    console.print(f"{held} of {total} decision(s) hold: {word}", markup=False, highlight=False)


def _claims_none(engine: dict[str, Any], patterns: list[str] | None) -> str:
    """As ``verify`` says it: an engine claiming none of the algorithms asked."""
    if not patterns:
        return f"{engine['name']} claims no algorithm"
    return f"{engine['name']} claims none of the algorithms asked ({','.join(patterns)})"


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, size in (("MiB", 1 << 20), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def _points(r: dict[str, Any]) -> str:
    cells = []
    for p in r["points"]:
        where = _size(p["size"]) if p["size"] else "-"
        mark = " (declined)" if "declined" in p else ""
        choice = "engine" if p["decision"] == "engine" else "sw"
        cells.append(f"{where}: {p['ratio']:.3g}x ±{p['band']:.0%} p={p['p']:.2g} {choice}{mark}")
    return "\n".join(cells)


_VERDICT = {
    "always": "engine always wins",
    "never": "engine never wins",
    "no significant gain": "no significant gain: software",
}


def _verdict(r: dict[str, Any]) -> str:
    text = _verdict_kind(r)
    if "confidence" in r:
        text += f"\nconfidence {r['confidence']:.3g}"
    return text


def _verdict_kind(r: dict[str, Any]) -> str:
    kind = r["kind"]
    if kind in _VERDICT:
        return _VERDICT[kind]
    text = f"engine wins from {_size(r['min_size'])}" if r["min_size"] else "engine wins"
    if r["max_size"] is not None:
        text += f" up to {_size(r['max_size'])}"
    return text + (" (in more than one stretch: the highest kept)" if "mixed" in kind else "")


def _policy_cell(r: dict[str, Any]) -> str:
    kind = r["kind"]
    if kind in ("never", "no significant gain"):
        return "exclude"
    text = f"min_size {r['min_size']}"
    if r["max_size"] is not None:
        text += f", max_size {r['max_size']}"
    return text


def print_report(report: dict[str, Any], console: Console) -> None:
    """One table per engine: the points measured (engine/software ratio and noise band), the
    verdict and what goes in the policy."""
    for engine in report["engines"]:
        if not engine["available"]:
            console.print(
                f"[bold red]FAIL[/] {engine['name']} is not available: {engine['reason']}"
            )
            continue
        title = f"calibrate: {engine['name']} against software (engine/software throughput)"
        table = Table(title=title)
        for column in ("algorithm", "points (size: ratio ± noise)", "verdict", "policy"):
            table.add_column(column, overflow="fold")
        for r in engine["results"]:
            table.add_row(
                f"{r['algorithm']}\n{r['operation']}", _points(r), _verdict(r), _policy_cell(r)
            )
        console.print(table)
        for alg, why in engine["skipped"].items():
            console.print(f"{engine['name']} {alg}: not calibrated: {why}", markup=False)
    for name, why in report["not_found"].items():
        console.print(f"not found here: {name}: {why}", markup=False, highlight=False)
    if not report["engines"]:
        console.print("no engine to calibrate: name one with --engines", markup=False)
    if report.get("written"):
        console.print(f"policy written to {report['written']}", markup=False)
