"""Routing by a calibrated policy against the better of software alone and the engine alone.

For one engine, every algorithm selected and every size of the sweep (64 B to 1 MiB), three
providers run the benchmark's case side by side in one process, in rotating order over the
trials: software only, the engine only (it takes everything it claims) and the engine under the
calibrated policy (``cryptoffload calibrate``'s, from ``--policy PATH``, else calibrated here
first, up to the largest size). The goal: the routed provider reaches at least 95% of the better
of the other two at every size. ``--runs N`` repeats calibration and measurement N times in a
row. Prints the per-size ratios (see "How a size is judged" below) and exits 1 when a ratio
misses the goal beyond the noise.

``--baseline SPEC`` stands an engine in for software: it becomes every provider's software
engine (named "software"), so the software-only provider is that engine alone, and the routed
and adaptive providers send it every op their policy keeps from the engine, as they would send
OpenSSL (the primitives' direct calls to OpenSSL stay off for a stand-in). With two synthetic
engines this gives a real crossover on this machine, which OpenSSL's AES-GCM does not: no engine
computing on this CPU beats OpenSSL on it (see ``cryptoffload.engines.synthetic``).

``--adaptive`` adds a column: the engine under adaptive routing (``Policy(adaptive=True)``, no
calibration, the engine taking every size to start), warmed up over all sizes of an algorithm
(``--warmup`` ops each, interleaved) before they are measured; its ratio is printed beside the
routed one's and the goal is judged on both.

How a size is judged. Every trial runs the providers back to back (rotating order), so each
trial gives paired ratios: routed (or adaptive) over the better of software and engine in that
trial. Printed per size: the plain ratio (medians over trials: routed / the better side) and the
band of the paired ratios (lowest..highest). The goal is met at a size when the plain ratio is
at least 0.95. A size below it is a miss "beyond the noise" when the paired ratios are below 0.95
in enough trials for a one-sided sign test (p <= 0.05: all of 5 trials, 8 of 9); otherwise it
is "within the noise". A run meets the goal when every size does by the plain ratio; the
script's exit status is 1 only for misses beyond the noise.

Run: python3 benchmarks/routing.py --engines SPEC [--baseline SPEC] [--policy PATH]
[--algs LIST] [--sizes LIST] [--time S] [--trials N] [--runs N] [--adaptive [--warmup N]]
"""

from __future__ import annotations

import argparse
import sys

from cryptoffload import Policy, Provider
from cryptoffload.core.lane import SOFTWARE
from cryptoffload.engines import from_spec
from cryptoffload.tools import calibrate, verify
from cryptoffload.tools.bench.cases import MIB
from cryptoffload.tools.bench.cli import _block_sizes, comma_list, engine_list
from cryptoffload.tools.bench.timing import run_for, summarize
from cryptoffload.tools.calibrate_stats import ALPHA, fewest_pairs, sign_test_p
from cryptoffload.tools.targets import Target, Targets, probed

GOAL = 0.95
SIZES = [64, 256, 1024, 4096, 16384, 65536, 262144, 1048576]


def measure(case, providers: dict[str, Provider], size: int, seconds: float, trials: int) -> dict:
    """Per provider at ``size``: the per-trial rates (MiB/s, or ops/s), their median, spread."""
    fns = {side: case.build(p, size) for side, p in providers.items()}
    scale = size / MIB if case.bulk else 1.0
    rates: dict[str, list[float]] = {side: [] for side in fns}
    order = list(fns)
    for trial in range(trials):
        k = trial % len(order)
        for side in order[k:] + order[:k]:
            t = run_for(fns[side], seconds)
            rates[side].append(t.ops / t.wall * scale)
    out = {}
    for side, values in rates.items():
        median, spread, _ = summarize(values)
        out[side] = {"median": median, "spread": spread, "rates": values}
    return out


def judge(m: dict, side: str) -> dict:
    """``side``'s plain ratio to the better of software and engine, the band of its paired
    per-trial ratios, and whether a miss of the goal is beyond the noise (a sign test)."""
    best = max(m["software"]["median"], m["engine"]["median"])
    plain = m[side]["median"] / best if best else 0.0
    paired = [
        r / max(s, e) if max(s, e) else 0.0
        for r, s, e in zip(
            m[side]["rates"], m["software"]["rates"], m["engine"]["rates"], strict=True
        )
    ]
    below = sum(r < GOAL for r in paired)
    p = sign_test_p(below, len(paired))
    return {
        "plain": plain,
        "low": min(paired),
        "high": max(paired),
        "met": plain >= GOAL,
        "beyond": plain < GOAL and p <= ALPHA,
    }


def one_run(engine, algs, args, baseline) -> tuple[int, list, list]:
    """Calibrate (unless ``--policy``), then measure: (rows, misses beyond the noise, misses
    within it)."""

    def stand_in() -> list:
        return [baseline] if baseline else []

    if args.policy:
        policy = Policy.load(args.policy)
    else:
        print(f"calibrating {engine.name} ({len(algs)} algorithms)...", file=sys.stderr)
        settings = calibrate.Settings(high=max(args.sizes))
        targets = Targets([Target(engine)])
        if baseline is None:
            report = calibrate.run(targets, algs, settings)
        else:
            report = calibrate.run(targets, algs, settings, baseline=lambda: Provider(stand_in()))
        policy = calibrate.policy_from(report)
    section = policy.engines.get(engine.name, {})
    providers = {
        "software": Provider(stand_in()),
        "engine": Provider([engine, *stand_in()], policy=verify.TAKE_ALL),
        "routed": Provider([engine, *stand_in()], policy=policy),
    }
    if args.adaptive:
        adaptive = Policy(min_size={"*": 0}, adaptive=True)
        providers["adaptive"] = Provider([engine, *stand_in()], policy=adaptive)
    sides = list(providers)
    what = f"software = {args.baseline} (a stand-in)" if baseline else "software = OpenSSL"
    print(f"{engine.name}; {what}; unit MiB/s (ops/s for public-key rows); noise = widest spread")
    header = f"{'algorithm':16} {'size':>7} {'software':>10} {'engine':>10} {'routed':>10}"
    extra = f" {'adaptive':>10} {'a.ratio':>7} {'a.band':>11}" if args.adaptive else ""
    print(f"{header} {'ratio':>6} {'band':>11}{extra} {'noise':>6}  routed by the policy")
    misses, unsure, rows = [], [], 0
    for alg in algs:
        case = calibrate.case_for(alg)
        low, high = policy.limits(alg, engine.caps.min_size, engine.name)
        excluded = policy.excludes(alg, engine.name)
        route = "software (excluded)" if excluded else f"engine from {low} B"
        if not excluded and high is not None:
            route += f" to {high} B"
        sizes = args.sizes if case.bulk else args.sizes[:1]
        if args.adaptive:
            warm = [case.build(providers["adaptive"], size) for size in sizes]
            for _ in range(args.warmup):
                for fn in warm:
                    fn()
        for size in sizes:
            m = measure(case, providers, size, args.time, args.trials)
            judged = [judge(m, "routed")]
            noise = max(m[side]["spread"] for side in sides)
            shown = size if case.bulk else "-"
            r = judged[0]
            line = (
                f"{alg:16} {shown:>7} {m['software']['median']:>10.1f} "
                f"{m['engine']['median']:>10.1f} {m['routed']['median']:>10.1f} "
                f"{r['plain']:>6.3f} {r['low']:>5.2f}..{r['high']:<4.2f}"
            )
            if args.adaptive:
                a = judge(m, "adaptive")
                judged.append(a)
                line += (
                    f" {m['adaptive']['median']:>10.1f} {a['plain']:>7.3f} "
                    f"{a['low']:>5.2f}..{a['high']:<4.2f}"
                )
            line += f" {noise:>6.0%}  {route}"
            rows += 1
            if not all(j["met"] for j in judged):
                beyond = any(j["beyond"] for j in judged)
                line += "  < goal" + (" (beyond the noise)" if beyond else " (within the noise)")
                (misses if beyond else unsure).append((alg, size, min(j["plain"] for j in judged)))
            print(line)
    print(f"policy section for {engine.name}: {section or 'none (default routing)'}")
    if args.adaptive:
        for alg in algs:
            info = providers["adaptive"].counters.snapshot()[engine.name].get(alg, {})
            a = info.get("adaptive", {})
            print(
                f"adaptive {alg}: threshold {a.get('threshold')} B, {a.get('moves')} moves, "
                f"{a.get('samples')} samples"
            )
    met = rows - len(misses) - len(unsure)
    print(
        f"{met} of {rows} sizes at {GOAL:.0%} of the better path or above (plain ratio); "
        f"{len(unsure)} below it within the noise; {len(misses)} below it beyond the noise"
    )
    return rows, misses, unsure


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", required=True, metavar="SPEC", help="one engine spec")
    parser.add_argument(
        "--baseline", metavar="SPEC", help="an engine standing in for software (see above)"
    )
    parser.add_argument(
        "--policy", metavar="PATH", help="a calibrated policy (default: calibrate now)"
    )
    parser.add_argument("--algs", type=comma_list, metavar="LIST", help="algorithms (globs)")
    parser.add_argument("--sizes", type=_block_sizes, default=SIZES, metavar="LIST")
    parser.add_argument("--time", type=float, default=0.05, help="seconds per trial and side")
    parser.add_argument("--trials", type=int, default=9, help="trials per side and size")
    parser.add_argument("--runs", type=int, default=1, help="runs in a row (default 1)")
    parser.add_argument(
        "--adaptive", action="store_true", help="add adaptive routing's column (see above)"
    )
    parser.add_argument(
        "--warmup", type=int, default=3000, help="adaptive: warm-up ops per size (default 3000)"
    )
    args = parser.parse_args()
    specs = engine_list(args.engines)
    if len(specs) != 1:
        parser.error("--engines takes one engine spec here")
    if args.runs < 1:
        parser.error("--runs must be 1 or more")
    verify.check_patterns(args.algs)
    engine = probed(from_spec(specs[0]))
    if not engine.caps.available:
        print(f"routing: {engine.name} is not available: {engine.caps.reason}", file=sys.stderr)
        return 1
    baseline = None
    if args.baseline:
        baseline = from_spec(args.baseline)
        baseline.name = SOFTWARE  # the providers' software engine (see above)
    algs = [a for a in verify.select(engine.caps.algorithms, args.algs) if calibrate.case_for(a)]
    if args.trials < fewest_pairs():
        print(
            f"routing: with {args.trials} trials no miss can be beyond the noise "
            f"(a sign test needs {fewest_pairs()})",
            file=sys.stderr,
        )
    failed = strict = 0
    for run in range(1, args.runs + 1):
        print(f"== run {run} of {args.runs}")
        rows, misses, unsure = one_run(engine, algs, args, baseline)
        failed += bool(misses)
        strict += not misses and not unsure
        verdict = (
            "missed beyond the noise"
            if misses
            else "goal met within the noise"
            if unsure
            else "goal met at every size"
        )
        print(f"run {run}: {verdict} ({len(misses)} of {rows} sizes beyond, {len(unsure)} within)")
    if args.runs > 1:
        print(
            f"{strict} of {args.runs} runs met the goal at every size by the plain ratio; "
            f"{args.runs - failed} of {args.runs} had no miss beyond the noise"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
