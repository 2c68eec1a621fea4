"""Routing by a calibrated policy against the better of software alone and the engine alone.

For one engine, every algorithm selected and every size of the sweep (64 B to 1 MiB), three
providers run the benchmark's case side by side in one process, in rotating order over the
trials: software only, the engine only (it takes everything it claims) and the engine under the
calibrated policy (``cryptoffload calibrate``'s, from ``--policy PATH``, else calibrated here
first, up to the largest size). The goal: the routed provider reaches at least 95% of the better
of the other two at every size. ``--runs N`` repeats calibration and measurement N times in a
row (the goal is met in every run or not at all). Prints the per-size ratios and exits 1 when a
ratio misses the goal by more than its noise band.

``--baseline SPEC`` stands an engine in for software (the software-only provider is that
engine taking everything; the routed provider offers the engine first, within the policy, and
the stand-in takes the rest; calibration measures against it). With two synthetic engines this
gives a real crossover on this machine, which OpenSSL's AES-GCM does not: no engine computing on
this CPU beats OpenSSL on it (see ``cryptoffload.engines.synthetic``).

``--adaptive`` adds a column: the engine under adaptive routing (``Policy(adaptive=True)``, no
calibration, the engine taking every size to start), warmed up over all sizes of an algorithm
(``--warmup`` ops each, interleaved) before they are measured, its ratio to the better path
printed beside the routed one's (the goal is judged on both). Not with ``--baseline``:
adaptive routing weighs the engines against software, and the stand-in is an engine.

Run: python3 benchmarks/routing.py --engines SPEC [--baseline SPEC] [--policy PATH]
[--algs LIST] [--sizes LIST] [--time S] [--trials N] [--runs N] [--adaptive [--warmup N]]
"""

from __future__ import annotations

import argparse
import sys

from cryptoffload import Policy, Provider
from cryptoffload.engines import from_spec
from cryptoffload.tools import calibrate, verify
from cryptoffload.tools.bench.cases import MIB
from cryptoffload.tools.bench.cli import _block_sizes, comma_list, engine_list
from cryptoffload.tools.bench.timing import run_for, summarize
from cryptoffload.tools.targets import Target, Targets, probed

GOAL = 0.95
SIZES = [64, 256, 1024, 4096, 16384, 65536, 262144, 1048576]


def measure(case, providers: dict[str, Provider], size: int, seconds: float, trials: int) -> dict:
    """Median throughput (MiB/s, or ops/s) of each provider at ``size``, with spreads."""
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
        out[side] = {"median": median, "spread": spread}
    return out


def one_run(engine, algs, args, baseline) -> tuple[int, list, list]:
    """Calibrate (unless ``--policy``), then measure: (rows, misses, below the goal in noise)."""
    make_base = (lambda: Provider([baseline], policy=verify.TAKE_ALL)) if baseline else None
    if args.policy:
        policy = Policy.load(args.policy)
    else:
        print(f"calibrating {engine.name} ({len(algs)} algorithms)...", file=sys.stderr)
        settings = calibrate.Settings(high=max(args.sizes))
        targets = Targets([Target(engine)])
        if make_base is None:
            report = calibrate.run(targets, algs, settings)
        else:
            report = calibrate.run(targets, algs, settings, baseline=make_base)
        policy = calibrate.policy_from(report)
    section = policy.engines.get(engine.name, {})
    stand_in = [baseline] if baseline else []
    providers = {
        "software": make_base() if make_base else Provider([]),
        "engine": Provider([engine], policy=verify.TAKE_ALL),
        "routed": Provider([engine, *stand_in], policy=policy),
    }
    if args.adaptive:
        adaptive = Policy(min_size={"*": 0}, adaptive=True)
        providers["adaptive"] = Provider([engine], policy=adaptive)
    sides = list(providers)
    header = f"{'algorithm':16} {'size':>7} {'software':>10} {'engine':>10} {'routed':>10}"
    what = f"software = {baseline.name}" if baseline else "software = OpenSSL"
    print(f"{engine.name}; {what}; unit MiB/s (ops/s for public-key rows); noise = widest spread")
    extra = f" {'adaptive':>10} {'a.ratio':>7}" if args.adaptive else ""
    print(f"{header} {'ratio':>6}{extra} {'noise':>6}  routed by the policy")
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
            best = max(m["software"]["median"], m["engine"]["median"])
            ratio = m["routed"]["median"] / best if best else 0.0
            noise = max(m[side]["spread"] for side in sides)
            shown = size if case.bulk else "-"
            extra = ""
            if args.adaptive:
                a_ratio = m["adaptive"]["median"] / best if best else 0.0
                extra = f" {m['adaptive']['median']:>10.1f} {a_ratio:>7.3f}"
                ratio = min(ratio, a_ratio)
            line = (
                f"{alg:16} {shown:>7} {m['software']['median']:>10.1f} "
                f"{m['engine']['median']:>10.1f} {m['routed']['median']:>10.1f} "
                f"{m['routed']['median'] / best if best else 0.0:>6.3f}{extra} {noise:>6.0%}  "
                f"{route}"
            )
            rows += 1
            if ratio < GOAL:
                # Within the noise: the ratio times (1 + the widest spread) reaches the goal.
                within = ratio * (1 + noise) >= GOAL
                line += "  < goal" + (" (within noise)" if within else "")
                (unsure if within else misses).append((alg, size, ratio))
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
        f"{met} of {rows} sizes at {GOAL:.0%} of the better path or above; {len(unsure)} below "
        f"it within the noise (measure again on a quiet machine); {len(misses)} below it beyond"
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
    parser.add_argument("--trials", type=int, default=5, help="trials per side and size")
    parser.add_argument("--runs", type=int, default=1, help="runs in a row (default 1)")
    parser.add_argument(
        "--adaptive", action="store_true", help="add adaptive routing's column (see above)"
    )
    parser.add_argument(
        "--warmup", type=int, default=3000, help="adaptive: warm-up ops per size (default 3000)"
    )
    args = parser.parse_args()
    if args.adaptive and args.baseline:
        parser.error("--adaptive weighs the engine against software: not with --baseline")
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
    baseline = from_spec(args.baseline) if args.baseline else None
    algs = [a for a in verify.select(engine.caps.algorithms, args.algs) if calibrate.case_for(a)]
    failed = 0
    for run in range(1, args.runs + 1):
        print(f"== run {run} of {args.runs}")
        rows, misses, unsure = one_run(engine, algs, args, baseline)
        failed += bool(misses)
        verdict = "missed beyond the noise" if misses else "goal met"
        print(f"run {run}: {verdict} ({len(misses)} of {rows} sizes beyond, {len(unsure)} within)")
    if args.runs > 1:
        print(f"{args.runs - failed} of {args.runs} runs in a row met the goal")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
