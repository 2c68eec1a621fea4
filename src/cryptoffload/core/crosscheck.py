"""Engine results held to software's: one result recomputed and compared, and the sampling
safeguard a provider puts in front of an engine (``Provider(..., cross_check=rate)``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from cryptography.exceptions import InvalidSignature

from cryptoffload.blocks._lazy import LazyModule
from cryptoffload.core.ops import CHECK_FAILURES, AeadOp, CipherOp, EcdsaOp, Op, RsaOp, is_answer
from cryptoffload.devicekey import DeviceKeyError
from cryptoffload.errors import CryptoffloadError

#: RSA paddings: loaded at the first RSA operation (its import is a start-up cost).
_padding = LazyModule("cryptography.hazmat.primitives.asymmetric.padding")

AGREE = "agree"
MISMATCH = "mismatch"
UNCHECKED = "unchecked"

#: Exceptions that are an operation's answer (a failed check), as the provider treats them.


class Check(NamedTuple):
    """What comparing one engine outcome with software's found: ``status`` is AGREE, MISMATCH
    or UNCHECKED (random output, a device-bound key); ``detail`` says how, never with data."""

    status: str
    detail: str = ""


class CrossCheckMismatch(CryptoffloadError):
    """An engine's result disagreed with software's: the provider counts it as a fault and
    lets the next engine, or software, answer."""


def compare(
    op: Op,
    software: Any,
    result: Any = None,
    error: BaseException | None = None,
    *,
    data: Any = None,
    private_of: Callable[[Any], Any] | None = None,
) -> Check:
    """Hold one engine outcome for ``op`` (its ``result``, or the answer ``error`` it raised)
    to what ``software`` (an engine: the provider's software) gives for the same op.

    ``data`` is the op's input as it was before the engine ran, for an op whose ``out`` may
    share memory with ``data`` (an in-place cipher). Random outcomes are checked as far as they
    can be: signatures must verify in software, an RSA ciphertext must decrypt to the message
    when ``private_of(public_key)`` gives the private key, random bytes must have their length.
    """
    family = op.family
    if family == "rng":
        if error is not None:
            return Check(MISMATCH, f"raised {type(error).__name__}")
        if not isinstance(result, (bytes, bytearray)) or len(result) != op.length:
            return Check(MISMATCH, f"gave {_length(result)} random bytes, {op.length} asked")
        return Check(UNCHECKED, "random output: length checked")
    if error is None and op.family in ("mlkem", "mldsa") and _randomised(op):
        return _check_post_quantum(op, software, result)
    if error is None and _randomised(op):
        return _check_random(op, software, result, private_of)
    reference = _replay(op, data)
    try:
        expected, expected_error = software.run(reference), None
    except DeviceKeyError:
        return Check(UNCHECKED, "a device-bound key: software cannot use it")
    except Exception as exc:  # software's own answer (a failed tag) or a refusal
        expected, expected_error = None, exc
    if expected_error is not None and not isinstance(expected_error, (*CHECK_FAILURES, ValueError)):
        return Check(UNCHECKED, f"software could not redo it ({type(expected_error).__name__})")
    if error is not None or expected_error is not None:
        if type(error) is type(expected_error):
            return Check(AGREE)
        theirs = type(expected_error).__name__ if expected_error is not None else "a result"
        ours = type(error).__name__ if error is not None else "a result"
        return Check(MISMATCH, f"the engine gave {ours} where software gives {theirs}")
    got = _engine_value(op, result)
    return _same(got, expected)


def _length(value: Any) -> str:
    try:
        return str(len(value))
    except TypeError:
        return type(value).__name__


def _randomised(op: Op) -> bool:
    """Whether two correct engines may give different results for ``op``."""
    if op.family == "mlkem":
        return op.kind == "encapsulate"
    if op.family == "mldsa":
        return op.kind == "sign"  # hedged: a fresh random value in every signature
    if op.family == "ecdsa":
        return op.kind == "sign" and not op.deterministic
    if op.family == "rsa":
        if op.kind == "encrypt":
            return True
        return op.kind == "sign" and not isinstance(op.padding, _padding.PKCS1v15)
    return False


def _check_post_quantum(op: Any, software: Any, result: Any) -> Check:
    """An ML-DSA signature must verify in software; an ML-KEM encapsulation has no private key
    here to open it: only its shape is checked."""
    if op.family == "mlkem":
        if not (isinstance(result, tuple) and len(result) == 2 and len(result[0]) == 32):
            return Check(MISMATCH, "not a (32-byte secret, ciphertext) pair")
        return Check(UNCHECKED, "random encapsulation: shape checked (no private key to open it)")
    if not isinstance(result, (bytes, bytearray)):
        return Check(MISMATCH, f"gave {type(result).__name__}, not bytes")
    from cryptoffload.core.ops import MldsaOp

    check = MldsaOp(
        op.alg.replace("-sign", "-verify"),
        "verify",
        op.key.public_key(),
        data=op.data,
        digest=op.digest,
        context=op.context,
        signature=bytes(result),
    )
    try:
        software.run(check)
    except (InvalidSignature, ValueError):
        return Check(MISMATCH, "the signature does not verify in software")
    return Check(AGREE)


def _check_random(op: Any, software: Any, result: Any, private_of: Any) -> Check:
    if not isinstance(result, (bytes, bytearray)):
        return Check(MISMATCH, f"gave {type(result).__name__}, not bytes")
    public = op.key.public_key() if op.kind == "sign" else op.key
    if op.kind == "encrypt":
        if len(result) != (op.key.key_size + 7) // 8:
            return Check(
                MISMATCH, f"ciphertext of {len(result)} bytes for a {op.key.key_size}-bit key"
            )
        private = private_of(op.key) if private_of is not None else None
        if private is None:
            return Check(UNCHECKED, "random padding: length checked (no private key to open it)")
        alg = op.alg.replace("-public", "-private")
        try:
            opened = software.run(RsaOp(alg, "decrypt", private, data=result, padding=op.padding))
        except ValueError:
            return Check(MISMATCH, "the ciphertext does not decrypt in software")
        return (
            Check(AGREE)
            if opened == bytes(op.data)
            else Check(MISMATCH, "decrypts to another message")
        )
    if op.family == "rsa":
        check = RsaOp(
            op.alg.replace("-private", "-public"),
            "verify",
            public,
            digest=op.digest,
            signature=bytes(result),
            padding=op.padding,
            hash_alg=op.hash_alg,
        )
    else:
        check = EcdsaOp(
            op.alg.replace("-sign", "-verify"),
            "verify",
            public,
            op.digest,
            op.hash_alg,
            signature=bytes(result),
        )
    try:
        software.run(check)
    except (InvalidSignature, ValueError):
        return Check(MISMATCH, "the signature does not verify in software")
    return Check(AGREE)


def _replay(op: Op, data: Any) -> Op:
    """The op for software to redo: a cipher op writes nowhere, and reads its original input."""
    if op.family == "cipher" and (op.out is not None or data is not None):
        return CipherOp(op.alg, op.kind, op.key, op.iv, data if data is not None else op.data)
    if op.family == "aead" and op.into is not None:  # an *_into op: software writes nowhere
        source = data if data is not None else op.data
        return AeadOp(op.alg, op.kind, op.key, op.iv, source, op.aad, op.tag_length)
    return op


def _engine_value(op: Op, result: Any) -> Any:
    if op.family == "cipher" and op.out is not None and isinstance(result, int):
        return bytes(memoryview(op.out).cast("B")[:result])
    if op.family == "aead" and op.into is not None and isinstance(result, int):
        return bytes(memoryview(op.into).cast("B")[:result])
    return result


def _same(got: Any, expected: Any) -> Check:
    if isinstance(got, (bytes, bytearray, memoryview)) and isinstance(expected, (bytes, bytearray)):
        got = bytes(got)
        if got == expected:
            return Check(AGREE)
        if len(got) != len(expected):
            return Check(MISMATCH, f"{len(got)} bytes where software gives {len(expected)}")
        first = next(i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b)
        wrong = sum(a != b for a, b in zip(got, expected, strict=True))
        return Check(MISMATCH, f"{wrong} of {len(got)} bytes differ, the first at byte {first}")
    if got == expected and type(got) is type(expected):
        return Check(AGREE)
    return Check(
        MISMATCH, f"gave {type(got).__name__} where software gives {type(expected).__name__}"
    )


class Sampled:
    """An engine as one algorithm's route sees it when the provider cross-checks: every
    operation goes to ``engine``; about one in ``1 / rate`` (at random intervals) is redone by
    ``software`` and compared. A mismatch calls ``on_mismatch(op, check)`` and raises
    :class:`CrossCheckMismatch`, which the provider counts as a fault before asking the next
    engine or software. ``counted(mismatch)`` records each comparison made.

    Only the sampled operations cost more: the others pay one countdown step. Streams
    (``open_stream``, ``open_aead_stream``) pass through unchecked. The countdown is not locked:
    threads racing on it shift which operation is sampled, never whether results are checked at
    about the rate.
    """

    def __init__(
        self,
        engine: Any,
        rate: float,
        software: Any,
        counted: Callable[[bool], None],
        on_mismatch: Callable[[Op, Check], None],
    ) -> None:
        if not 0 < rate <= 1:
            raise ValueError(f"a sampling rate is a fraction in (0, 1], got {rate}")
        self.name = engine.name
        self.engine = engine
        self._run = engine.run
        self._software = software
        self._counted = counted
        self._on_mismatch = on_mismatch
        import random  # here: cross-checking is off unless a provider asks for it

        self._random = random.Random()
        self._log_keep = math.log1p(-rate) if rate < 1 else 0.0
        self._left = self._gap()
        if callable(getattr(engine, "run_batch", None)):
            self.run_batch = self._run_batch
        for member in ("open_stream", "open_aead_stream"):
            opener = getattr(engine, member, None)
            if callable(opener):
                setattr(self, member, opener)

    def __repr__(self) -> str:
        return f"<Sampled {self.name}>"

    def _gap(self) -> int:
        """Operations until the next sampled one: geometric, mean 1 / rate."""
        if not self._log_keep:
            return 1
        return int(math.log(1.0 - self._random.random()) / self._log_keep) + 1

    def run(self, op: Op) -> Any:
        """Run ``op`` on the engine; check the result when its turn comes."""
        self._left -= 1
        if self._left > 0:
            return self._run(op)
        self._left = self._gap()
        into = op.out if op.family == "cipher" else getattr(op, "into", None)
        data = bytes(op.data) if into is not None else None
        try:
            result = self._run(op)
        except Exception as exc:
            if is_answer(op, exc):  # an answer is held to software's as a result is
                self._judge(op, self._compare(op, error=exc, data=data))
            raise
        self._judge(op, self._compare(op, result, data=data))
        return result

    def _run_batch(self, ops: Sequence[Op]) -> list[Any]:
        answers = list(self.engine.run_batch(ops))
        if len(answers) != len(ops):
            return answers  # the provider reports the engine's miscount
        for i, (op, answer) in enumerate(zip(ops, answers, strict=True)):
            self._left -= 1
            if self._left > 0 or (isinstance(answer, BaseException) and not is_answer(op, answer)):
                continue
            self._left = self._gap()
            if isinstance(answer, BaseException):
                check = self._compare(op, error=answer)
            else:
                check = self._compare(op, answer)
            try:
                self._judge(op, check)
            except CrossCheckMismatch as exc:
                answers[i] = exc
        return answers

    def _compare(self, op: Op, result: Any = None, **kw: Any) -> Check:
        # A failure of the check itself is not the engine's: the result stands, unchecked.
        try:
            return compare(op, self._software, result, **kw)
        except Exception as exc:
            return Check(UNCHECKED, f"the check failed: {type(exc).__name__}")

    def _judge(self, op: Op, check: Check) -> None:
        if check.status == UNCHECKED:
            return
        mismatch = check.status == MISMATCH
        self._counted(mismatch)
        if mismatch:
            self._on_mismatch(op, check)
            raise CrossCheckMismatch(
                f"engine {self.name} gave a wrong {op.alg} result ({check.detail})"
            )
