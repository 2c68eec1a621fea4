"""A test engine with a known cost curve: OpenSSL's answers, returned at latency + bytes/rate.

Spec: ``synthetic:latency=20us,throughput=2GiB/s[,algs=aes-*-gcm+sha256]`` (latency in ns, us,
ms or s; throughput in B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s or GiB/s; ``algs`` is a ``+``
separated list of names or globs, default ``aes-*-gcm``). Never discovered: only named.

The model. An op of ``n`` payload bytes costs the caller ``latency + n / throughput`` seconds of
wall time inside :meth:`SyntheticEngine.run`, counted from the moment the engine gets it. The
answer comes from the software engine (OpenSSL) within that time: the engine computes it first,
then waits out what is left of the curve, so OpenSSL's own time is deducted from the wait and
the curve is the op's whole cost inside the engine (the provider's bookkeeping around it is
not part of the curve; it is the same as for any engine). When OpenSSL alone takes longer than
the curve allows the op is late: it is answered all the same (never early, never wrong),
counted in ``figures["late"]`` and logged once per engine, because the curve no longer holds.

Hence what the curve can be: never faster than this machine's OpenSSL doing the same work. An
engine that computes its answers on this CPU cannot beat OpenSSL on it in wall time for one
caller; a curve that tries (say 20 GiB/s against OpenSSL's AES-GCM at 4-9 GiB/s here) turns
late above some size and costs OpenSSL's time plus the engine path's. A crossover where this
engine wins therefore exists against a slower path (a second synthetic engine standing in for
software, as ``benchmarks/routing.py --baseline`` does), not against OpenSSL's AES-GCM.

The wait spins on ``time.perf_counter`` up to the deadline: ``time.sleep`` on Linux wakes up
50 us or more late (timer slack, then the scheduler on a busy 2-core machine), larger than the
latencies modelled; a spin is accurate to a microsecond while the thread holds the CPU. Waits
longer than :data:`SLEEP_ABOVE` sleep for all but that last stretch, then spin, so a
millisecond-scale curve does not burn a shared core.
"""

from __future__ import annotations

import fnmatch
import logging
import re
import time
from typing import Any

from cryptoffload.core.names import all_algorithms
from cryptoffload.engines.base import Capabilities
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.errors import BadEngineSpec, Unavailable

log = logging.getLogger(__name__)

#: Defaults: 20 us a job and 2 GiB/s, above what this machine's OpenSSL needs for AES-GCM at
#: every size from 64 B to 1 MiB (about 1-2 us plus 4-9 GiB/s), so the curve holds.
DEFAULT_LATENCY = 20e-6
DEFAULT_THROUGHPUT = 2 * 1024**3
DEFAULT_ALGS = ("aes-*-gcm",)

#: A wait longer than this sleeps for all but this last stretch, which is spun.
SLEEP_ABOVE = 2e-3

_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_RATE_UNITS = {
    "B/s": 1,
    "KB/s": 1e3,
    "MB/s": 1e6,
    "GB/s": 1e9,
    "KiB/s": 1024,
    "MiB/s": 1024**2,
    "GiB/s": 1024**3,
}
_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(\S*)\s*$")


def _quantity(option: str, text: str, units: dict[str, float]) -> float:
    """``text`` as a number times its unit; BadEngineSpec naming the option otherwise."""
    match = _NUMBER.match(text)
    if match is None or match.group(2) not in units:
        raise BadEngineSpec(
            f"synthetic: {option}={text!r} is not a number with a unit ({', '.join(units)})"
        )
    return float(match.group(1)) * units[match.group(2)]


class SyntheticEngine:
    """Claims ``algorithms``; each op answered by OpenSSL and returned at its curve's time."""

    hardware_only = False

    def __init__(
        self,
        latency: float = DEFAULT_LATENCY,
        throughput: float = DEFAULT_THROUGHPUT,
        algorithms: tuple[str, ...] = DEFAULT_ALGS,
        name: str | None = None,
    ) -> None:
        if latency < 0 or throughput <= 0:
            raise BadEngineSpec(
                f"synthetic: latency must be >= 0 and throughput > 0, got {latency}, {throughput}"
            )
        self.latency = latency
        self.throughput = throughput
        self.patterns = algorithms
        self.name = name or _name(latency, throughput, algorithms)
        self._software = SoftwareEngine()
        self._claimed = frozenset(
            a for a in all_algorithms() if any(fnmatch.fnmatchcase(a, p) for p in algorithms)
        )
        self.jobs = 0
        self.late = 0
        self.waited = 0.0

    def probe(self) -> Capabilities:
        if not self._claimed:
            return Capabilities(False, f"algs={'+'.join(self.patterns)} matches no algorithm")
        driver = {"driver": "synthetic (OpenSSL, timed)", "hardware": False}
        return Capabilities(
            available=True,
            algorithms=self._claimed,
            min_size={"*": 0},  # no threshold of its own: calibration finds where it pays
            detail={
                "latency_us": round(self.latency * 1e6, 3),
                "throughput_mib_s": round(self.throughput / 1024**2, 3),
                "algorithms": {a: dict(driver) for a in sorted(self._claimed)},
            },
        )

    def cost(self, size: int) -> float:
        """Seconds an op of ``size`` payload bytes takes by the curve."""
        return self.latency + size / self.throughput

    def run(self, op: Any) -> Any:
        start = time.perf_counter()
        if op.alg not in self._claimed:
            raise Unavailable("unsupported", op.alg)
        result = self._software.run(op)
        self.jobs += 1
        deadline = start + self.cost(op.size)
        now = time.perf_counter()
        if now > deadline:
            self.late += 1
            if self.late == 1:
                log.warning(
                    "%s: OpenSSL alone took %.1f us for a %d-byte %s op, over the curve's "
                    "%.1f us: such ops are late (counted in figures['late'])",
                    self.name,
                    (now - start) * 1e6,
                    op.size,
                    op.alg,
                    (deadline - start) * 1e6,
                )
            return result
        self.waited += deadline - now
        _wait_until(deadline, now)
        return result

    @property
    def figures(self) -> dict[str, Any]:
        """Jobs done, jobs late (OpenSSL alone over the curve), seconds waited in all."""
        return {"jobs": self.jobs, "late": self.late, "waited_s": round(self.waited, 6)}


def _wait_until(deadline: float, now: float) -> None:
    """Return at ``deadline`` (perf_counter seconds): sleep while far from it, then spin."""
    if deadline - now > SLEEP_ABOVE:
        time.sleep(deadline - now - SLEEP_ABOVE)
    while time.perf_counter() < deadline:
        pass


def _name(latency: float, throughput: float, algorithms: tuple[str, ...]) -> str:
    """The canonical spec, which is also the engine's name (``from_spec`` takes it back)."""
    name = f"synthetic:latency={latency * 1e6:g}us,throughput={throughput / 1024**2:g}MiB/s"
    if tuple(algorithms) != DEFAULT_ALGS:
        name += ",algs=" + "+".join(algorithms)
    return name


def from_spec(arg: str) -> SyntheticEngine:
    """``synthetic[:latency=T,throughput=R,algs=A+B]``, any option left out at its default."""
    options: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in arg.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key not in ("latency", "throughput", "algs") or key in options:
            raise BadEngineSpec(
                f"synthetic: option {item!r} not taken; expected latency=T, throughput=R, "
                "algs=NAME+NAME (each once), e.g. synthetic:latency=20us,throughput=2GiB/s"
            )
        options[key] = value.strip()
    latency = (
        _quantity("latency", options["latency"], _TIME_UNITS)
        if "latency" in options
        else DEFAULT_LATENCY
    )
    throughput = (
        _quantity("throughput", options["throughput"], _RATE_UNITS)
        if "throughput" in options
        else DEFAULT_THROUGHPUT
    )
    algs = tuple(filter(None, options.get("algs", "").split("+"))) or DEFAULT_ALGS
    return SyntheticEngine(latency, throughput, algs)
