"""Engine sets held to software, answer by answer and op by op, with their tallies."""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag
from doubles import ChaosEngine, TakeAllEngine
from fuzz_cases import Case, keys_for, make_case, outcome

from cryptoffload import Policy, Provider, _stream
from cryptoffload import engines as registry
from cryptoffload.core.crosscheck import MISMATCH, compare
from cryptoffload.core.ops import AeadOp, HashOp, MacOp, Op
from cryptoffload.core.validate import validate_op
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.errors import Unavailable

TAKE_ALL = Policy(min_size={"*": 0})
_SOFTWARE = SoftwareEngine()


@dataclass
class Events:
    """What one engine did with the ops it was offered (since the last reset)."""

    offered: int = 0
    answered: int = 0  # results and answers (a failed tag or signature, an undecryptable text)
    declined: Counter = field(default_factory=Counter)
    faults: int = 0
    #: RSA decryptions refused with ValueError (counted among the faults, as the provider does).
    refusals: int = 0
    #: Each fault: the op and the exception's class and message.
    fault_details: list[str] = field(default_factory=list)
    #: Engine answers that software contradicts (crosscheck.compare), each with its detail.
    wrong: list[str] = field(default_factory=list)
    #: Ops that reached the engine although validation refuses them.
    unvalidated: list[str] = field(default_factory=list)


#: What the provider takes as an engine's answer; any other exception is a fault, and software
#: redoes the op (an RSA decryption's ValueError too: software has the last word on it).
ANSWERS = (InvalidTag, InvalidSignature)


class Recorder:
    """``engine`` as a provider sees it, every outcome noted in :attr:`events` and every answer
    held to software's for the same op (random outputs: verified or decrypted in software)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.name = engine.name
        self.events = Events()
        if callable(getattr(engine, "run_batch", None)):
            self.run_batch = self._run_batch
        if callable(getattr(engine, "open_stream", None)):
            self.open_stream = self._open_stream
        if callable(getattr(engine, "open_aead_stream", None)):
            self.open_aead_stream = self._open_aead_stream

    def __getattr__(self, name: str) -> Any:
        # Whatever else the engine has (close, figures, hardware_only...), as it has it.
        return getattr(self.engine, name)

    def probe(self) -> Any:
        return self.engine.probe()

    def _offered(self, op: Op) -> bytes | None:
        ev = self.events
        ev.offered += 1
        try:
            validate_op(op)
        except Exception as exc:  # the core refuses it: no engine may see it
            ev.unvalidated.append(f"{op!r}: {type(exc).__name__}")
        if op.family == "cipher" and getattr(op, "out", None) is not None:
            return bytes(op.data)  # the input, before an in-place engine overwrites it
        return None

    def _judge(
        self,
        op: Op,
        result: Any = None,
        error: BaseException | None = None,
        data: bytes | None = None,
    ) -> None:
        self.events.answered += 1
        check = compare(op, _SOFTWARE, result, error, data=data)
        if check.status == MISMATCH:
            self.events.wrong.append(f"{op!r}: {check.detail}")

    def _outcome(self, op: Op, result: Any, data: bytes | None) -> None:
        if isinstance(result, Unavailable):
            self.events.declined[result.reason] += 1
        elif isinstance(result, ANSWERS):
            self._judge(op, error=result, data=data)
        elif isinstance(result, BaseException):
            # A ValueError is the contract's answer for a ciphertext that does not decrypt; the
            # provider counts it as a fault and lets software say it again. Where software
            # decrypts it, it was a plain fault.
            if (
                isinstance(result, ValueError)
                and (op.family, op.kind) == ("rsa", "decrypt")
                and compare(op, _SOFTWARE, error=result).status != MISMATCH
            ):
                self.events.faults += 1
                self.events.refusals += 1
                return
            self._fault(op, result)
        else:
            self._judge(op, result, data=data)

    def _fault(self, op: Op, exc: BaseException) -> None:
        self.events.faults += 1
        self.events.fault_details.append(f"{op!r}: {type(exc).__name__}: {str(exc)[:120]}")

    def run(self, op: Op) -> Any:
        data = self._offered(op)
        try:
            result = self.engine.run(op)
        except Exception as exc:
            self._outcome(op, exc, data)
            raise
        self._outcome(op, result, data)
        return result

    def _run_batch(self, ops: Sequence[Op]) -> list[Any]:
        inputs = [self._offered(op) for op in ops]
        try:
            answers = list(self.engine.run_batch(ops))
        except Exception as exc:
            for op, data in zip(ops, inputs, strict=True):
                self._outcome(op, exc, data)
            raise
        if len(answers) == len(ops):
            for op, answer, data in zip(ops, answers, inputs, strict=True):
                self._outcome(op, answer, data)
        else:
            for op in ops:
                self._fault(op, RuntimeError(f"{len(answers)} answers for {len(ops)} ops"))
        return answers

    def _open_aead_stream(self, op: Op) -> Any:
        return _RecordedAeadStream(self, op, self._opened(self.engine.open_aead_stream, op))

    def _opened(self, opener: Any, op: Op) -> Any:
        self.events.offered += 1
        try:
            return opener(op)
        except Unavailable as exc:
            self.events.declined[exc.reason] += 1
            raise
        except Exception as exc:
            self._fault(op, exc)
            raise

    def _open_stream(self, op: Op) -> Any:
        self.events.offered += 1
        try:
            stream = self.engine.open_stream(op)
        except Unavailable as exc:
            self.events.declined[exc.reason] += 1
            raise
        except Exception as exc:
            self._fault(op, exc)
            raise
        return _RecordedStream(self, op, stream, [])


class _RecordedStream:
    """An engine's running hash or MAC, its input kept so that its digest can be checked."""

    def __init__(self, owner: Recorder, op: Op, stream: Any, fed: list[bytes]) -> None:
        self._owner, self._op, self._stream, self._fed = owner, op, stream, fed

    def _call(self, what: str, *args: Any) -> Any:
        try:
            return getattr(self._stream, what)(*args)
        except Exception as exc:
            self._owner._fault(self._op, exc)
            raise

    def update(self, data: Any) -> None:
        self._call("update", data)
        self._fed.append(bytes(data))

    def copy(self) -> _RecordedStream:
        twin = self._call("copy")
        self._owner.events.offered += 1
        return _RecordedStream(self._owner, self._op, twin, list(self._fed))

    def finalize(self) -> bytes:
        digest = self._call("finalize")
        op = self._op
        message = b"".join(self._fed)
        if op.family == "hash":
            whole: Op = HashOp(op.alg, "digest", message)
        else:
            whole = MacOp(op.alg, "mac", op.key, message, op.iv, op.tag_length)
        self._owner._judge(whole, digest)
        return digest

    def close(self) -> None:
        self._stream.close()


class _RecordedAeadStream:
    """An engine's GCM stream (``open_aead_stream``), held at its end to the one-shot op over
    everything it was fed: ciphertext and tag, or the plaintext (or InvalidTag) for the tag."""

    def __init__(self, owner: Recorder, op: Op, stream: Any) -> None:
        self._owner, self._op, self._stream = owner, op, stream
        self._aad: list[bytes] = []
        self._fed: list[bytes] = []
        self._out: list[bytes] = []

    def _call(self, what: str, *args: Any) -> Any:
        try:
            return getattr(self._stream, what)(*args)
        except Exception as exc:
            if not isinstance(exc, ANSWERS):
                self._owner._fault(self._op, exc)
            raise

    def update_aad(self, data: bytes) -> None:
        self._call("update_aad", data)
        self._aad.append(bytes(data))

    def update(self, data: bytes) -> bytes:
        out = self._call("update", data)
        self._fed.append(bytes(data))
        self._out.append(bytes(out))
        return out

    def finalize(self, tag: bytes | None = None) -> bytes:
        op, aad, fed = self._op, b"".join(self._aad), b"".join(self._fed)
        encrypt = op.kind == "encrypt"
        data = fed if encrypt else fed + bytes(tag or b"")
        tag_length = 16 if encrypt else len(tag or b"")
        whole = AeadOp(op.alg, op.kind, op.key, op.iv, data, aad, tag_length)
        try:
            result = self._call("finalize", tag)
        except ANSWERS as exc:
            self._owner._judge(whole, error=exc)
            raise
        self._owner._judge(whole, b"".join(self._out) + (result if encrypt else b""))
        return result

    def close(self) -> None:
        self._stream.close()


# -- engine sets -----------------------------------------------------------------------------------


def cryptodev_present() -> str | None:
    """How the cryptodev engine can run here: "device" (/dev/crypto), "stand-in" (the
    in-process one of tests/cryptodev_standin.py), or None (neither the engine nor a stand-in)."""
    try:
        import cryptoffload.engines.cryptodev  # noqa: F401
    except ImportError:
        return None
    if os.path.exists("/dev/crypto"):
        return "device"
    try:
        import cryptodev_standin  # noqa: F401
    except ImportError:
        return None
    return "stand-in"


def build_engine(spec: str, seed: int = 0) -> Any:
    """The engine of ``spec``: a registry spec, or a test double (``takeall``, ``chaos``)."""
    if spec == "takeall":
        return TakeAllEngine()
    if spec == "chaos":
        return ChaosEngine(seed=seed)
    if spec.partition(":")[0] == "cryptodev" and cryptodev_present() == "stand-in":
        import cryptodev_standin

        cryptodev_standin.install()
    return registry.from_spec(spec)


def default_specs() -> list[str]:
    """Every engine set this machine can run: software, the doubles, the CAAM models, cryptodev
    (device or stand-in) and AF_ALG where the kernel has it."""
    specs = ["software", "takeall", "chaos", "caam:model=t2080", "caam:model=t1040"]
    specs.append("caam:model=imx7d")
    if cryptodev_present():
        specs.append("cryptodev:any")
    try:
        from cryptoffload.engines.afalg import AfalgEngine

        if AfalgEngine(allow_software=True).probe().available:
            specs.append("afalg:any")
    except Exception:  # no AF_ALG here: the rig's guest has it
        pass
    return specs


@dataclass
class EngineSet:
    """One provider of the campaign: ``spec``'s engine (recorded) in front of software."""

    spec: str
    provider: Provider
    recorder: Recorder | None
    why_not: str = ""


def engine_set(spec: str, seed: int = 0) -> EngineSet:
    if spec == "software":
        return EngineSet(spec, Provider([]), None)
    recorder = Recorder(build_engine(spec, seed))
    provider = Provider([recorder], policy=TAKE_ALL)
    if recorder.name in provider.unavailable:
        return EngineSet(spec, provider, None, provider.unavailable[recorder.name])
    return EngineSet(spec, provider, recorder)


# -- a campaign ------------------------------------------------------------------------------------


@dataclass
class Tally:
    """One engine set's figures over a campaign."""

    spec: str
    cases: int = 0
    offered: int = 0
    answered: int = 0
    declined: Counter = field(default_factory=Counter)
    faults: int = 0
    refusals: int = 0  # RSA decryptions the engine refused (ValueError), counted as faults
    mismatches: int = 0  # API answers that differ from the software provider's
    disagreements: int = 0  # one raised where the other did not, or another exception class
    wrong: int = 0  # engine answers software contradicts (hidden by fallback from the caller)
    unvalidated: int = 0  # ops the engine saw that validation refuses
    drift: int = 0  # cases whose counters do not say what the engine did
    reproducers: list[str] = field(default_factory=list)

    @property
    def failures(self) -> int:
        return self.mismatches + self.disagreements + self.wrong + self.unvalidated + self.drift

    def note(self, seed: int, index: int, case: Case, what: str, keep: int) -> None:
        if len(self.reproducers) < keep:
            self.reproducers.append(f"seed {seed} case {index} [{case.family}] {case.text}: {what}")


@contextlib.contextmanager
def gather_limit(limit: int | None) -> Iterator[None]:
    """Hash and MAC contexts hand messages above ``limit`` bytes to engine streams (None: the
    library's own 4 MiB), so that a campaign reaches ``open_stream`` with short messages."""
    saved = _stream.GATHER_LIMIT
    if limit is not None:
        _stream.GATHER_LIMIT = limit
    try:
        yield
    finally:
        _stream.GATHER_LIMIT = saved


def _ops_by_alg(provider: Provider) -> Counter:
    out: Counter = Counter()
    for algs in provider.counters.snapshot().values():
        for alg, cell in algs.items():
            out[alg] += cell["ops"]
    return out


def _cells(provider: Provider, engine: str) -> tuple[int, int]:
    ops = faults = 0
    for cell in provider.counters.snapshot().get(engine, {}).values():
        ops += cell["ops"]
        faults += cell["faults"]
    return ops, faults


def run_campaign(
    specs: Sequence[str],
    seed: int,
    indices: Sequence[int],
    keep: int = 5,
    families: list[str] | None = None,
    on_case: Any = None,
) -> tuple[dict[str, Tally], dict[str, str]]:
    """Cases ``indices`` of ``seed`` through every engine set of ``specs``, each held to the
    software-only provider: the tallies by spec, and the sets that could not run (with why)."""
    keys = keys_for(seed)
    reference = Provider([])
    sets = [engine_set(spec, seed) for spec in specs]
    skipped = {s.spec: s.why_not for s in sets if s.why_not}
    sets = [s for s in sets if not s.why_not]
    tallies = {s.spec: Tally(s.spec) for s in sets}
    for index in indices:
        case = make_case(seed, index, keys, families)
        ref_before = _ops_by_alg(reference)
        expected = outcome(case, reference)
        ref_ops = _ops_by_alg(reference) - ref_before
        for es in sets:
            tally = tallies[es.spec]
            tally.cases += 1
            rec = es.recorder
            if rec is not None:
                rec.events = Events()
                before = _cells(es.provider, rec.name)
            ops_before = _ops_by_alg(es.provider)
            got = outcome(case, es.provider)
            ops = _ops_by_alg(es.provider) - ops_before
            if ops != ref_ops:
                tally.drift += 1
                tally.note(
                    seed,
                    index,
                    case,
                    f"counted ops {dict(ops)} where the software provider counts {dict(ref_ops)}",
                    keep,
                )
            if got != expected:
                if got[0] == expected[0] == "ok":
                    tally.mismatches += 1
                    tally.note(seed, index, case, "a different answer", keep)
                else:
                    tally.disagreements += 1
                    tally.note(
                        seed, index, case, f"{_said(got)} where software {_said(expected)}", keep
                    )
            if rec is None:
                continue
            ev = rec.events
            tally.offered += ev.offered
            tally.answered += ev.answered
            tally.declined.update(ev.declined)
            tally.faults += ev.faults
            tally.refusals += ev.refusals
            tally.wrong += len(ev.wrong)
            for detail in ev.wrong:
                tally.note(seed, index, case, f"engine answer contradicted: {detail}", keep)
            if not es.spec.startswith("chaos"):  # the chaos engine's faults are its own doing
                for detail in ev.fault_details:
                    tally.note(seed, index, case, f"engine faulted: {detail}", keep)
            tally.unvalidated += len(ev.unvalidated)
            for detail in ev.unvalidated:
                tally.note(seed, index, case, f"engine saw an invalid op: {detail}", keep)
            after = _cells(es.provider, rec.name)
            counted = (after[0] - before[0], after[1] - before[1])
            if counted != (ev.answered, ev.faults):
                tally.drift += 1
                tally.note(
                    seed,
                    index,
                    case,
                    f"counters say {counted[0]} ops, {counted[1]} faults; the engine answered "
                    f"{ev.answered}, faulted {ev.faults}",
                    keep,
                )
        if on_case is not None:
            on_case(index)
    for es in sets:
        with contextlib.suppress(Exception):
            es.provider.close()
    return tallies, skipped


def _said(result: tuple[str, Any]) -> str:
    return f"raised {result[1]}" if result[0] == "raised" else "answered"
