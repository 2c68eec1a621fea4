"""What cryptoffload adds over calling `cryptography` directly, side by side.

Each case times the direct call and the cryptoffload call in alternating rounds over the same
inputs in one process, and reports the medians: added microseconds per operation and the
throughput ratio. Paths: ``software`` (no engine claims the algorithm: the fast path every op
takes on a machine without engines) and ``engine`` (an engine claims AES-128-GCM and hands each
op to OpenSSL: the full path through Op, validation, routing and counting, the engine itself
costing what OpenSSL costs). A third, ``held`` (held back): that engine claims the algorithm but
the policy keeps every size measured from it (``min_size`` 2 MiB), so each op runs in software
on the direct path, its engine's decline counted; likewise a ``Cipher`` AES-128-CBC stream's
``update_into`` (64 B and 1 KiB), on the kept OpenSSL context. Software and engine paths also
time a ``Cipher`` GCM stream (AAD, one update, finalize, tag), which on the engine path stays
software's: that engine keeps no GHASH state (no ``open_aead_stream``), so each stream is
counted as its ``streaming`` decline.
The first rows are ``cryptography`` against itself: a control (the same call on both sides:
how far this run's noise alone moves a ratio from 1) and a floor (the call behind
``functools.partial``: what one C layer that sees every op costs, before any work of its own).
Run: python benchmarks/overhead.py [--rounds N] [--seconds S] [--only software|engine|held]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import statistics
import time
from collections.abc import Callable

from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives.asymmetric import ec as c_ec
from cryptography.hazmat.primitives.ciphers import Cipher as CCipher
from cryptography.hazmat.primitives.ciphers import algorithms as c_algorithms
from cryptography.hazmat.primitives.ciphers import modes as c_modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM as CAESGCM

import cryptoffload
from cryptoffload import ec, hashes
from cryptoffload.aead import AESGCM
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.engines.software import SoftwareEngine


class OpenSSLEngine(SoftwareEngine):
    """An engine that claims one algorithm (AES-128-GCM unless told) and does it in OpenSSL:
    the engine path, costed."""

    def __init__(self, alg: str = "aes-128-gcm", name: str = "openssl-as-engine") -> None:
        super().__init__()
        self.alg, self.name = alg, name

    def probe(self):
        caps = super().probe()
        return type(caps)(True, "", frozenset({self.alg}))


def per_op_seconds(fn: Callable[[], object], seconds: float) -> float:
    """Seconds per call of ``fn``, timed over batches long enough to hide the timer."""
    batch = 1
    while True:
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / batch
        batch = (
            batch * 2 if elapsed < seconds / 8 else int(batch * seconds / max(elapsed, 1e-9)) + 1
        )


def compare(
    name: str, size: int, direct: Callable[[], object], ours: Callable[[], object], args
) -> dict:
    """Paired rounds, order alternating: each round's difference is taken between neighbours in
    time, so slow drifts of a shared machine cancel; the medians of the pairs are reported."""
    direct_t, ours_t, added, ratios = [], [], [], []
    for i in range(args.rounds):
        pair = [direct, ours] if i % 2 == 0 else [ours, direct]
        times = {id(fn): per_op_seconds(fn, args.seconds) for fn in pair}
        d, o = times[id(direct)], times[id(ours)]
        direct_t.append(d)
        ours_t.append(o)
        added.append(o - d)
        ratios.append(d / o)
    return {
        "case": name,
        "size": size,
        "direct_us": statistics.median(direct_t) * 1e6,
        "ours_us": statistics.median(ours_t) * 1e6,
        "added_us": statistics.median(added) * 1e6,
        "ratio": statistics.median(ratios),
    }


def control_cases(args) -> list[dict]:
    """What the harness and one call layer do to a ratio, ``cryptography`` on both sides:

    - the control: the same AES-128-GCM encrypt of 64 B on both sides (two objects, one key).
      Its ratio is what this run's noise does to a difference of nothing;
    - the floor: the same call behind ``functools.partial``, the standard library's own
      forwarder (GCM encrypt and a CBC stream's ``update_into``, 64 B). Its ratio is what one
      C layer that sees every op costs before it does any work of its own.
    """
    key, nonce, data = bytes(range(16)), bytes(12), bytes(64)
    first, second = CAESGCM(key), CAESGCM(key)
    forwarded = functools.partial(second.encrypt)
    iv, buf = bytes(range(16, 32)), bytearray(64 + 15)
    stream = CCipher(c_algorithms.AES(key), c_modes.CBC(iv)).encryptor()
    stream_forwarded = functools.partial(stream.update_into)
    return [
        compare(
            "control: cryptography vs itself",
            64,
            lambda: first.encrypt(nonce, data, None),
            lambda: second.encrypt(nonce, data, None),
            args,
        ),
        compare(
            "floor: gcm encrypt, functools.partial",
            64,
            lambda: first.encrypt(nonce, data, None),
            lambda: forwarded(nonce, data, None),
            args,
        ),
        compare(
            "floor: cbc update_into, functools.partial",
            64,
            lambda: stream.update_into(data, buf),
            lambda: stream_forwarded(data, buf),
            args,
        ),
    ]


def gcm_stream_cases(label: str, provider: cryptoffload.Provider | None, args) -> list[dict]:
    """A ``Cipher`` GCM encryption stream, direct and through ``provider``."""
    key, nonce = bytes(range(16)), bytes(12)

    def stream(cipher, data: bytes) -> bytes:
        ctx = cipher.encryptor()
        ctx.authenticate_additional_data(b"header")
        ctx.update(data)
        ctx.finalize()
        return ctx.tag

    def direct(data: bytes) -> bytes:
        return stream(CCipher(c_algorithms.AES(key), c_modes.GCM(nonce)), data)

    def ours(data: bytes) -> bytes:
        return stream(Cipher(algorithms.AES(key), modes.GCM(nonce), provider=provider), data)

    results = []
    for size in (64, 16384):
        data = bytes(size)
        assert ours(data) == direct(data)
        results.append(
            compare(f"{label}aes-128-gcm Cipher stream", size,
                    lambda data=data: direct(data), lambda data=data: ours(data), args)
        )  # fmt: skip
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21, help="paired rounds per case")
    parser.add_argument("--seconds", type=float, default=0.05, help="time per round and side")
    parser.add_argument(
        "--only", choices=("software", "engine", "held"), help="run one path's cases"
    )
    args = parser.parse_args()
    from cryptoffload.core import directpath

    twin = (
        "compiled" if directpath.COMPILED else "pure Python (CRYPTOFFLOAD_PURE_PYTHON or no build)"
    )
    print(f"AEAD direct path and Cipher held-back path: {twin}")
    results = control_cases(args)
    if args.only in (None, "software"):
        results += software_cases(args)
    if args.only in (None, "held"):
        results += held_cases(args)
    if args.only in (None, "engine"):
        results += engine_cases(args)
    print(
        f"{'case':40} {'bytes':>8} {'direct us':>10} {'ours us':>10} {'added us':>9} {'ratio':>6}"
    )
    for r in results:
        print(
            f"{r['case']:40} {r['size']:>8} {r['direct_us']:>10.3f} {r['ours_us']:>10.3f} "
            f"{r['added_us']:>9.3f} {r['ratio']:>6.3f}"
        )


def engine_cases(args) -> list[dict]:
    """AES-128-GCM encrypt through a provider whose engine claims it and runs it in OpenSSL."""
    engine = OpenSSLEngine()
    provider = cryptoffload.Provider([engine], cryptoffload.Policy(min_size={"*": 0}))
    key, nonce = bytes(range(16)), bytes(12)
    c_gcm, o_gcm = CAESGCM(key), AESGCM(key, provider=provider)
    results = []
    for size in (64, 16384, 1 << 20):
        data = bytes(size)
        assert o_gcm.encrypt(nonce, data, None) == c_gcm.encrypt(nonce, data, None)
        results.append(
            compare(
                "engine path: aes-128-gcm encrypt",
                size,
                lambda data=data: c_gcm.encrypt(nonce, data, None),
                lambda data=data: o_gcm.encrypt(nonce, data, None),
                args,
            )
        )
    done = provider.counters.snapshot()[engine.name]["aes-128-gcm"]["ops"]
    if not done:
        raise SystemExit("the engine did none of the engine-path operations")
    return results + gcm_stream_cases("engine path: ", provider, args)


def held_cases(args) -> list[dict]:
    """AES-128-GCM encrypt and decrypt that an engine claims and the policy holds back from it
    at every size measured: software does them, the engine's decline counted."""
    engine = OpenSSLEngine()
    policy = cryptoffload.Policy(min_size={"aes-128-gcm": 2 << 20})
    provider = cryptoffload.Provider([engine], policy)
    key, nonce = bytes(range(16)), bytes(12)
    c_gcm, o_gcm = CAESGCM(key), AESGCM(key, provider=provider)
    results = []
    for size in (64, 16384, 1 << 20):
        data = bytes(size)
        sealed = c_gcm.encrypt(nonce, data, None)
        assert o_gcm.encrypt(nonce, data, None) == sealed
        assert o_gcm.decrypt(nonce, sealed, None) == data
        results.append(
            compare(
                "held back: aes-128-gcm encrypt",
                size,
                lambda data=data: c_gcm.encrypt(nonce, data, None),
                lambda data=data: o_gcm.encrypt(nonce, data, None),
                args,
            )
        )
        results.append(
            compare(
                "held back: aes-128-gcm decrypt",
                size,
                lambda sealed=sealed: c_gcm.decrypt(nonce, sealed, None),
                lambda sealed=sealed: o_gcm.decrypt(nonce, sealed, None),
                args,
            )
        )
    snap = provider.counters.snapshot()
    if snap[engine.name].get("aes-128-gcm", {}).get("ops") or not snap["software"]:
        raise SystemExit("the held-back operations were not all software's")
    if not snap[engine.name]["aes-128-gcm"]["declined"].get("below-threshold"):
        raise SystemExit("the engine's declines of the held-back operations were not counted")
    return results + cbc_stream_cases(args)


def cbc_stream_cases(args) -> list[dict]:
    """A ``Cipher`` AES-128-CBC encryption stream that an engine claims and the policy holds
    back from it at every size: ``update_into`` of 64 B and 1 KiB, again and again on one
    stream (``cryptography``'s context beside it), each its engine's decline."""
    engine = OpenSSLEngine("aes-128-cbc", "openssl-as-cbc-engine")
    policy = cryptoffload.Policy(min_size={"aes-128-cbc": 2 << 20})
    provider = cryptoffload.Provider([engine], policy)
    results = cbc_update_into_cases("held back: ", provider, args)
    snap = provider.counters.snapshot()
    if snap[engine.name].get("aes-128-cbc", {}).get("ops") or not snap["software"]:
        raise SystemExit("the held-back CBC updates were not all software's")
    if not snap[engine.name]["aes-128-cbc"]["declined"].get("below-threshold"):
        raise SystemExit("the engine's declines of the held-back CBC updates were not counted")
    return results


def cbc_update_into_cases(label: str, provider: cryptoffload.Provider | None, args) -> list[dict]:
    """A ``Cipher`` AES-128-CBC encryption stream's ``update_into`` of 64 B and 1 KiB, again and
    again on one stream, through ``provider`` (None: the default), ``cryptography``'s beside it."""
    key, iv = bytes(range(16)), bytes(range(16, 32))
    results = []
    for size in (64, 1024):
        data = bytes(range(256)) * (size // 256) if size >= 256 else bytes(range(size))
        c_ctx = CCipher(c_algorithms.AES(key), c_modes.CBC(iv)).encryptor()
        o_ctx = Cipher(algorithms.AES(key), modes.CBC(iv), provider=provider).encryptor()
        c_buf, o_buf = bytearray(size + 15), bytearray(size + 15)
        for _ in range(3):  # the same stream, block for block (both then run on, unchecked)
            assert o_ctx.update_into(data, o_buf) == c_ctx.update_into(data, c_buf) == size
            assert o_buf == c_buf
        results.append(
            compare(
                f"{label}aes-128-cbc update_into",
                size,
                lambda data=data, ctx=c_ctx, buf=c_buf: ctx.update_into(data, buf),
                lambda data=data, ctx=o_ctx, buf=o_buf: ctx.update_into(data, buf),
                args,
            )
        )
    return results


def software_cases(args) -> list[dict]:
    """The software path's cases: no engine claims the algorithm."""
    provider = cryptoffload.Provider([])  # software only: the path every op takes without engines
    cryptoffload.set_default_provider(provider)
    key, nonce = bytes(range(16)), bytes(12)
    small, large, huge = bytes(64), bytes(16384), bytes(1 << 20)
    c_gcm, o_gcm = CAESGCM(key), AESGCM(key)
    c_key = c_ec.generate_private_key(c_ec.SECP256R1())
    o_key = ec.EllipticCurvePrivateKey(c_key)
    sha = c_hashes.SHA256()

    def c_hash():
        h = c_hashes.Hash(sha)
        h.update(small)
        return h.finalize()

    def o_hash():
        h = hashes.Hash(sha)
        h.update(small)
        return h.finalize()

    results = [
        compare(
            "aes-128-gcm encrypt",
            64,
            lambda: c_gcm.encrypt(nonce, small, None),
            lambda: o_gcm.encrypt(nonce, small, None),
            args,
        ),
        compare(
            "aes-128-gcm encrypt",
            16384,
            lambda: c_gcm.encrypt(nonce, large, None),
            lambda: o_gcm.encrypt(nonce, large, None),
            args,
        ),
        compare(
            "aes-128-gcm encrypt",
            1 << 20,
            lambda: c_gcm.encrypt(nonce, huge, None),
            lambda: o_gcm.encrypt(nonce, huge, None),
            args,
        ),
        compare("sha256 Hash (vs cryptography)", 64, c_hash, o_hash, args),
        compare(
            "sha256 Hash (vs hashlib)", 64, lambda: hashlib.sha256(small).digest(), o_hash, args
        ),
        compare(
            "ecdsa-p256-sign",
            0,
            lambda: c_key.sign(small, c_ec.ECDSA(sha)),
            lambda: o_key.sign(small, ec.ECDSA(sha)),
            args,
        ),
    ]
    results += gcm_stream_cases("", None, args)
    results += cbc_update_into_cases("", None, args)
    if not provider.counters.snapshot()["software"]:
        raise SystemExit("the provider counted none of the software-path operations")
    return results


if __name__ == "__main__":
    main()
