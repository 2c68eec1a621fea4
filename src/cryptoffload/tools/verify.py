"""`verify`: proof that an engine does the work it claims, and does it right.

Per engine and claimed algorithm, a small fixed workload (:mod:`cryptoffload.tools.workload`):

1. offload: run through a provider holding the engine; its counters must show the work;
2. negative control: the same workload on a provider without the engine, in alternating timed
   runs; the engine's counters and its own figures (not a device process's) must not move,
   software's must take every operation, and wall and CPU time are compared with the noise
   band (no measurable effect is a finding);
3. cross-check: every result the engine gave in step 1 is redone in software and compared;
4. CPU signature: user, sys and wall time of the engine's timed runs (this process's: RUSAGE_SELF),
   read as the i.MX article does (a witness for kernel engines, and for the CAAM device
   process, whose work runs in another process the caller waits on);
5. binding: the driver behind the algorithm, hardware or software.
"""

from __future__ import annotations

import fnmatch
import math
import resource
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptoffload.core.counters import diff
from cryptoffload.core.crosscheck import MISMATCH, UNCHECKED, compare
from cryptoffload.core.names import all_algorithms
from cryptoffload.core.ops import CHECK_FAILURES
from cryptoffload.core.policy import Policy
from cryptoffload.core.provider import SOFTWARE, Provider
from cryptoffload.errors import NoResult
from cryptoffload.tools import workload
from cryptoffload.tools.bench import cpu, stats
from cryptoffload.tools.bench.runner import figures_change
from cryptoffload.tools.targets import Probed, Target, Targets

#: Verify holds nothing back: every operation of the workload is offered to the engine.
TAKE_ALL = Policy(min_size={"*": 0})
#: Engines whose work runs in the kernel, where the CPU signature is a witness.
KERNEL_KINDS = ("afalg", "cryptodev")
#: Exceptions that are an operation's answer (an altered tag or signature), not a failure.
#: What an engine may raise as an operation's answer (the lane's rule, ops.is_answer).
_ANSWERS = (*CHECK_FAILURES, NoResult)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Settings:
    """How much verify measures: ``trials`` timed runs a side, each repeating the workload for
    at least ``trial_seconds``; ``seed`` chooses the workload's inputs."""

    trials: int = 5
    trial_seconds: float = 0.02
    seed: int = 0


class Recorder(Probed):
    """The engine as verify registers it: while recording, each outcome (result or answer) is
    kept with its op; otherwise calls go straight to the engine."""

    def __init__(self, probed: Probed) -> None:
        super().__init__(probed.engine, probed.caps)
        self.outcomes: list[tuple[Any, Any, BaseException | None]] = []

    def start(self) -> None:
        """Keep every outcome from now on."""
        self.outcomes = []
        self.run = self._recording

    def stop(self) -> list[tuple[Any, Any, BaseException | None]]:
        """Stop keeping outcomes; the ones kept, in order."""
        self.run = self.engine.run
        return self.outcomes

    def _recording(self, op: Any) -> Any:
        try:
            result = self.engine.run(op)
        except _ANSWERS as exc:
            self.outcomes.append((op, None, exc))
            raise
        self.outcomes.append((op, result, None))
        return result


def select(claimed: frozenset[str] | set[str], patterns: Sequence[str] | None) -> list[str]:
    """The claimed algorithms matching ``patterns`` (all claimed when None), in the names'
    order."""
    order = {alg: i for i, alg in enumerate(all_algorithms())}
    chosen = [
        alg
        for alg in claimed
        if not patterns or any(fnmatch.fnmatchcase(alg, pat) for pat in patterns)
    ]
    return sorted(chosen, key=lambda alg: (order.get(alg, len(order)), alg))


def check_patterns(patterns: Sequence[str] | None) -> None:
    """ValueError for a pattern that matches no algorithm name at all (a typo)."""
    known = all_algorithms()
    for pat in patterns or ():
        if not any(fnmatch.fnmatchcase(alg, pat) for alg in known):
            raise ValueError(
                f"--algs entry {pat!r} matches no algorithm name; names look like aes-128-gcm, "
                "sha256, hmac-sha256, rsa-2048-private, ecdsa-p256-sign, ecdh-p256, ffdhe2048, "
                "drbg (globs allowed: 'aes-*-cbc')"
            )


def kernel_engine(name: str) -> bool:
    """Whether the engine's work runs in the kernel (AF_ALG, /dev/crypto)."""
    return name.partition(":")[0] in KERNEL_KINDS


def device_process(name: str) -> bool:
    """Whether the engine's work runs in a device process (``caam:device=...``)."""
    return name.startswith("caam:") and "device=" in name.partition(":")[2].split(",")[0]


def binding(target: Target, alg: str) -> dict[str, Any]:
    """The driver behind ``alg`` on the engine, whether it is hardware, where that comes from,
    and a flag when an engine that promises hardware is bound to a software driver."""
    detail = target.caps.detail
    per_alg = detail.get("algorithms")
    bound = per_alg.get(alg) if isinstance(per_alg, Mapping) else None
    transport = detail.get("transport")
    if isinstance(bound, Mapping) and "driver" in bound:
        hardware = bound.get("hardware")
        kind = "hardware" if hardware else ("software" if hardware is False else "unknown")
        out = {"driver": str(bound["driver"]), "kind": kind}
        out["source"] = "/proc/crypto" if kernel_engine(target.name) else "the engine"
    elif isinstance(transport, str) and transport.startswith(("model:", "device:")):
        out = {"driver": transport, "kind": "model", "source": "the engine"}
    elif isinstance(transport, str):
        out = {"driver": transport, "kind": "hardware", "source": "the engine"}
    else:
        out = {"driver": "", "kind": "unknown", "source": "the engine says nothing"}
    hardware_only = bool(getattr(target.engine, "hardware_only", False))
    out["flag"] = (
        f"{target.name} promises hardware but {alg} is bound to software driver {out['driver']}"
        if hardware_only and out["kind"] == "software"
        else ""
    )
    return out


def _attempt(item: workload.Item, provider: Provider) -> BaseException | None:
    """Run one item; None, or the exception it ended with (an answer or a failure)."""
    try:
        item.run(provider)
    except Exception as exc:
        return exc
    return None


def _timed(items: Sequence[workload.Item], provider: Provider, repeat: int) -> dict[str, float]:
    """Wall, user and sys seconds of ``repeat`` passes over ``items`` on this thread."""
    # The whole process: a driver's completion thread or the CAAM model's work counts too.
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    for _ in range(repeat):
        for item in items:
            _attempt(item, provider)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "wall": wall,
        "user": after.ru_utime - before.ru_utime,
        "sys": after.ru_stime - before.ru_stime,
    }


def _comparison(control: list[float], engine: list[float], what: str) -> dict[str, Any]:
    """Whether ``engine``'s samples differ from ``control``'s beyond the noise, in words."""
    if not control or not engine or not statistics.median(control):
        return {"verdict": "no data", "finding": f"{what}: too short to measure"}
    c, e = statistics.median(control), statistics.median(engine)
    verdict = stats.verdict(control, engine)
    change = e / c - 1
    band = verdict.spread
    out = {
        "control": round(c, 6),
        "engine": round(e, 6),
        "change": round(change, 4),
        "band": round(band, 4),
        "p_value": round(verdict.p_value, 4) if verdict.p_value is not None else None,
        "verdict": verdict.text,
    }
    if verdict.text == "beyond noise":
        out["finding"] = f"{what}: {times(change)} software's (noise band {band:.0%})"
    elif verdict.text == "within noise":
        out["finding"] = f"no measurable effect on {what} ({times(change)}, noise band {band:.0%})"
    else:
        out["finding"] = f"too few trials to compare {what} ({times(change)})"
    return out


def times(change: float) -> str:
    """A relative change in words: ``+12%``, ``-40%``, ``35x`` (an engine run 35 times as long)."""
    return f"{change + 1:.3g}x" if change >= 1 else f"{change:+.0%}"


def _figures(engine: Any) -> dict[str, Any] | None:
    figures = getattr(engine, "figures", None)
    return dict(figures) if isinstance(figures, Mapping) and figures else None


#: Where an engine's figures carry another process's own: a ``caam:device=`` engine's
#: ``device``. That process publishes them after the engine has seen its jobs complete (the
#: last loop turn's work time, the interrupt it raised), and its idle wakeups tick with no job
#: at all: they move in a control run that gave the engine nothing.
DEVICE_FIGURES = "device"


def _engine_figures(engine: Any) -> dict[str, Any] | None:
    """The engine's figures of its own doing (jobs it sent, bytes it copied...), counted in this
    process as it works: what the negative control holds still."""
    figures = _figures(engine)
    if figures is not None:
        figures.pop(DEVICE_FIGURES, None)
    return figures or None


def _nonzero(moved: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in moved.items()
        if (isinstance(v, (int, float)) and v) or (isinstance(v, Mapping) and v)
    }


def verify_algorithm(
    target: Target,
    recorder: Recorder,
    provider: Provider,
    control: Provider,
    alg: str,
    settings: Settings,
) -> dict[str, Any]:
    """Steps 1 to 5 for one algorithm of one engine; the result, with ``problems`` that fail it."""
    name = target.name
    out: dict[str, Any] = {"algorithm": alg, "binding": binding(target, alg)}
    problems: list[str] = []
    if not workload.supported(alg):
        out.update(status="no workload", passed=False)
        out["problems"] = [f"verify has no workload for {alg}: it cannot prove it"]
        return out
    items = workload.build(alg, settings.seed)
    by_op = {id(item.op): item for item in items if item.op is not None}

    # 1. Offload: the engine's counters must show the work.
    before = provider.counters.snapshot()
    recorder.start()
    start = time.perf_counter()
    ended = [_attempt(item, provider) for item in items]
    pass_wall = time.perf_counter() - start
    outcomes = recorder.stop()
    moved = diff(before, provider.counters.snapshot())
    mine = moved.get(name, {}).get(alg, {})
    offload = {
        "offered": len(items),
        "ops": mine.get("ops", 0),
        "bytes": mine.get("bytes", 0),
        "declined": mine.get("declined", {}),
        "faults": mine.get("faults", 0),
        "software_ops": moved.get(SOFTWARE, {}).get(alg, {}).get("ops", 0),
    }
    out["offload"] = offload
    if offload["ops"] == 0:
        status = "not offloaded"
        reasons = ", ".join(f"{r} x{n}" for r, n in offload["declined"].items())
        problems.append(
            f"not offloaded: the engine took none of {len(items)} operations"
            + (f" (declined: {reasons})" if reasons else "")
            + (f" ({offload['faults']} faults)" if offload["faults"] else "")
        )
    elif offload["ops"] < len(items):
        status = "partly offloaded"
    else:
        status = "offloaded"
    if offload["faults"]:
        problems.append(f"the engine faulted on {offload['faults']} of {len(items)} operations")
    failed = [
        (item, exc)
        for item, exc in zip(items, ended, strict=True)
        if exc is not None and not isinstance(exc, _ANSWERS)
    ]
    for item, exc in failed:
        problems.append(f"{item.label} raised {type(exc).__name__}: {exc}")
    out["status"] = status

    # 3. Cross-check: every engine result against software's.
    software = provider.software
    mismatches, agreed, unchecked = [], 0, 0
    for op, result, error in outcomes:
        check = compare(op, software, result, error, private_of=workload.private_of)
        if check.status == MISMATCH:
            item = by_op.get(id(op))
            where = item.describe() if item is not None else {"label": op.kind, "size": op.size}
            mismatches.append({"algorithm": alg, "input": where, "detail": check.detail})
            problems.append(
                f"wrong result: {alg}, {where['label']}, size {where['size']} "
                f"(workload seed {settings.seed}, item {where.get('item', '?')}): {check.detail}"
            )
        elif check.status == UNCHECKED:
            unchecked += 1
        else:
            agreed += 1
    out["crosscheck"] = {
        "compared": len(outcomes),
        "agreed": agreed,
        "unchecked": unchecked,
        "mismatches": mismatches,
    }

    # 2. Negative control, timed against the engine run; 4. the CPU signature.
    control_report, engine_runs = _negative_control(
        target, provider, control, alg, items, pass_wall, settings
    )
    out["control"] = control_report
    problems += [f"negative control: {p}" for p in control_report["problems"]]
    wall = sum(r["wall"] for r in engine_runs)
    user, sys_ = sum(r["user"] for r in engine_runs), sum(r["sys"] for r in engine_runs)
    signature = cpu.accounting(wall, user, sys_)
    # Read against the part of a core software got meanwhile: on a busy machine a run that
    # keeps its core busy gets less than all of it, and would read as idle.
    share = control_report["control_cpu_share"]
    if share and share < 1:
        signature["reading"] = cpu.reading(wall * share, user, sys_)
    signature["core_share"] = share
    signature["witness"] = kernel_engine(name) or device_process(name)
    out["cpu"] = signature

    # 5. Binding.
    if out["binding"]["flag"]:
        problems.append(out["binding"]["flag"])
    out["problems"] = problems
    out["passed"] = not problems
    return out


def _repeats(seconds: float, one_pass: float) -> int:
    return max(1, math.ceil(seconds / max(one_pass, 1e-6)))


def _negative_control(
    target: Target,
    provider: Provider,
    control: Provider,
    alg: str,
    items: Sequence[workload.Item],
    pass_wall: float,
    settings: Settings,
) -> tuple[dict[str, Any], list[dict[str, float]]]:
    """Timed runs of ``items`` on the engine's provider and on ``control`` (the engine
    unregistered), alternating, each repeating the workload for ``settings.trial_seconds``.
    In the control runs nothing of the engine may move and software must do every operation.
    Returns the report (times per pass over the workload) and the engine runs."""
    name = target.name
    start = time.perf_counter()
    for item in items:
        _attempt(item, control)
    repeat = _repeats(settings.trial_seconds, pass_wall)
    repeat_control = _repeats(settings.trial_seconds, time.perf_counter() - start)
    expected = len(items) * repeat_control
    engine_runs, control_runs, problems, software_ops = [], [], [], []
    for trial in range(settings.trials):
        if trial % 2 == 0:  # alternate which goes first, so that a drift cancels
            engine_runs.append(_timed(items, provider, repeat))
        snap_p, snap_c = provider.counters.snapshot(), control.counters.snapshot()
        figures = _engine_figures(target.engine)
        control_runs.append(_timed(items, control, repeat_control))
        still = {e: a for e, a in diff(snap_p, provider.counters.snapshot()).items() if a}
        took = diff(snap_c, control.counters.snapshot())
        after = _engine_figures(target.engine) or {}
        moved = _nonzero(figures_change(figures, after)) if figures else {}
        if trial % 2 == 1:
            engine_runs.append(_timed(items, provider, repeat))
        if still:
            problems.append(f"counters of the provider holding {name} moved meanwhile: {still}")
        others = {e: a for e, a in took.items() if e != SOFTWARE and a}
        if others:
            problems.append(f"with {name} unregistered, counters of {sorted(others)} moved")
        if moved:
            problems.append(f"{name}'s own figures moved with the engine unregistered: {moved}")
        software_ops.append(took.get(SOFTWARE, {}).get(alg, {}).get("ops", 0))
    if any(n != expected for n in software_ops):
        problems.append(
            f"software did {min(software_ops)} to {max(software_ops)} of the {expected} "
            "operations of a control run"
        )

    def per_pass(runs: list[dict[str, float]], n: int, key: str) -> list[float]:
        return [(r["user"] + r["sys"] if key == "cpu" else r[key]) / n for r in runs]

    report = {
        "passed": not problems,
        "problems": sorted(set(problems)),
        "expected_software_ops": expected,
        "software_ops": software_ops,
        "repeat": {"engine": repeat, "control": repeat_control},
        "wall": _comparison(
            per_pass(control_runs, repeat_control, "wall"),
            per_pass(engine_runs, repeat, "wall"),
            "wall time",
        ),
        "cpu": _comparison(
            per_pass(control_runs, repeat_control, "cpu"),
            per_pass(engine_runs, repeat, "cpu"),
            "CPU time",
        ),
        "control_cpu_share": _share(control_runs),
    }
    return report, engine_runs


def _share(runs: list[dict[str, float]]) -> float | None:
    """The part of a core the runs got (user + sys over wall)."""
    wall = sum(r["wall"] for r in runs)
    return round(sum(r["user"] + r["sys"] for r in runs) / wall, 3) if wall else None


def verify_engine(
    target: Target,
    patterns: Sequence[str] | None,
    settings: Settings,
    progress: Progress | None = None,
    control: Provider | None = None,
) -> dict[str, Any]:
    """Every selected algorithm ``target`` claims, verified; the engine's part of the report.

    ``control`` is the provider of the negative control (default: software alone)."""
    caps = target.caps
    out: dict[str, Any] = {
        "name": target.name,
        "origin": target.origin,
        "available": caps.available,
        "reason": caps.reason,
        "kernel": kernel_engine(target.name),
        "hardware_only": bool(getattr(target.engine, "hardware_only", False)),
        "algorithms": [],
        "problems": [],
    }
    if not caps.available:
        out["problems"].append(f"{target.name} is not available: {caps.reason or 'no reason'}")
        out["passed"] = False
        return out
    algs = select(caps.algorithms, patterns)
    if not algs:
        asked = ",".join(patterns or ())
        out["problems"].append(f"{target.name} claims none of the algorithms asked ({asked})")
        out["passed"] = False
        return out
    recorder = Recorder(target.engine)
    provider = Provider([recorder], policy=TAKE_ALL)
    control = control if control is not None else Provider([])
    figures_before = _figures(target.engine)
    for alg in algs:
        if progress is not None:
            progress(f"{target.name} {alg}")
        out["algorithms"].append(
            verify_algorithm(target, recorder, provider, control, alg, settings)
        )
    if figures_before is not None:
        out["figures"] = _nonzero(figures_change(figures_before, _figures(target.engine) or {}))
    shares = [a["control"]["control_cpu_share"] for a in out["algorithms"] if "control" in a]
    shares = [s for s in shares if s is not None]
    out["software_cpu_share"] = min(shares) if shares else None
    out["passed"] = all(a["passed"] for a in out["algorithms"])
    return out


def steps(targets: Targets, patterns: Sequence[str] | None) -> int:
    """How many algorithm checks :func:`run` will make (for a progress bar)."""
    return sum(
        len(select(t.caps.algorithms, patterns)) for t in targets.engines if t.caps.available
    )


def run(
    targets: Targets,
    patterns: Sequence[str] | None,
    settings: Settings | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Verify every target; the JSON report (``passed`` is the exit status's answer)."""
    from cryptoffload.tools.bench import machine

    settings = settings or Settings()
    check_patterns(patterns)
    engines = [verify_engine(t, patterns, settings, progress) for t in targets.engines]
    verified = [a for e in engines for a in e["algorithms"]]
    problems = []
    if not targets.engines:
        problems.append(
            "no crypto engine other than software was found here: every operation runs in "
            "software (see why each is missing above, or name one with --engines)"
        )
    return {
        "machine": machine.describe(),
        "settings": {
            "engines": [t.name for t in targets.engines],
            "algorithms": list(patterns) if patterns else None,
            "trials": settings.trials,
            "trial_seconds": settings.trial_seconds,
            "seed": settings.seed,
            "sizes": list(workload.SIZES),
        },
        "engines": engines,
        "not_found": dict(targets.absent),
        "problems": problems,
        "checked": len(verified),
        "failed": sum(not a["passed"] for a in verified)
        + sum(not e["passed"] and not e["algorithms"] for e in engines),
        "passed": bool(engines) and all(e["passed"] for e in engines) and not problems,
    }
