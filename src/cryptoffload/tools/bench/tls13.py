"""An application view: TLS 1.3 full handshakes per second and record protection, per engine.

A server's full handshake with ECDHE P-256 costs one key generation and one agreement, one
certificate signature (ECDSA P-256 or RSA-2048 PSS), and the key schedule: about a dozen
HMAC-SHA256 calls on short inputs (HKDF extract/expand, Finished). Each piece is timed through
the provider, like a bench row; the estimate is one over the sum of their costs. Record
protection is AES-128-GCM with TLS 1.3's 5-byte header as associated data.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec as c_ec
from cryptography.hazmat.primitives.asymmetric import padding

from cryptoffload import ec, rsa
from cryptoffload.aead import AESGCM
from cryptoffload.core.names import HASH_CLASSES
from cryptoffload.core.policy import Policy
from cryptoffload.core.provider import SOFTWARE, Provider
from cryptoffload.hmac import HMAC
from cryptoffload.tools.bench.cases import bench_ec_key, bench_rsa_key
from cryptoffload.tools.bench.runner import Progress, row_providers
from cryptoffload.tools.bench.timing import measure, summarize

#: HMAC-SHA256 calls in one server handshake's key schedule (extracts, expands, Finished).
KEY_SCHEDULE_HMACS = 12
RECORD_SIZES = (1400, 16384)
_HEADER = bytes([23, 3, 3, 0, 0])


def _pieces(p: Provider) -> dict[str, Callable[[], object]]:
    sha = HASH_CLASSES["sha256"]()
    peer = bench_ec_key("p256", 1).public_key()
    signer = ec.EllipticCurvePrivateKey(bench_ec_key("p256", 0), provider=p)
    rsa_key = rsa.RSAPrivateKey(bench_rsa_key(2048), provider=p)
    pss = padding.PSS(padding.MGF1(sha), padding.PSS.DIGEST_LENGTH)
    transcript = bytes(32)

    def ecdhe() -> bytes:
        mine = ec.generate_private_key(c_ec.SECP256R1(), provider=p)
        return mine.exchange(ec.ECDH(), ec.EllipticCurvePublicKey(peer))

    def key_schedule() -> None:
        for _ in range(KEY_SCHEDULE_HMACS):
            h = HMAC(transcript, sha, provider=p)
            h.update(transcript)
            h.finalize()

    return {
        "ecdhe-p256": ecdhe,
        "ecdsa-p256-sign": functools.partial(signer.sign, transcript, ec.ECDSA(sha)),
        "rsa-2048-pss-sign": functools.partial(rsa_key.sign, transcript, pss, sha),
        "key-schedule": key_schedule,
    }


def _records(p: Provider, size: int) -> Callable[[], object]:
    g = AESGCM(bytes(16), provider=p)
    data, out = bytes(size), bytearray(size + 16)
    return functools.partial(g.encrypt_into, bytes(12), data, _HEADER, out)


def _unavailable(name: str, reason: str) -> dict[str, Any]:
    """An engine that is not available here: its reason, and no figures."""
    return {
        "engine": name,
        "piece_seconds": {},
        "handshakes_per_s": {},
        "records_mib_per_s": {},
        "offloaded_ops": {},
        "unavailable": reason,
    }


def run(
    engines: Sequence[Any],
    seconds: float,
    trials: int,
    policy: Policy | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Per engine: seconds per handshake piece, handshakes/s, record MiB/s, offload shares."""
    results = []
    for row in row_providers(engines, policy):
        name, provider = row.name, row.provider
        if row.unavailable is not None:
            results.append(_unavailable(name, row.unavailable))
            continue
        before = provider.counters.snapshot()
        cost: dict[str, float] = {}
        for piece, fn in _pieces(provider).items():
            if progress is not None:
                progress(f"tls13 {piece} [{name}]")
            rate, _, _ = summarize(measure(fn, seconds, trials).rates(1.0))
            cost[piece] = 1.0 / rate if rate else float("inf")
        records = {}
        for size in RECORD_SIZES:
            if progress is not None:
                progress(f"tls13 records {size} B [{name}]")
            rate, _, _ = summarize(measure(_records(provider, size), seconds, trials).rates(1.0))
            records[size] = rate * size / (1 << 20)
        after = provider.counters.snapshot()
        offloaded = (
            {
                alg: cell["ops"] - before.get(name, {}).get(alg, {}).get("ops", 0)
                for alg, cell in after.get(name, {}).items()
            }
            if name != SOFTWARE
            else {}
        )
        common = cost["ecdhe-p256"] + cost["key-schedule"]
        results.append(
            {
                "engine": name,
                "piece_seconds": {k: round(v, 9) for k, v in cost.items()},
                "handshakes_per_s": {
                    "ecdhe-p256+ecdsa-p256": round(1.0 / (common + cost["ecdsa-p256-sign"]), 1),
                    "ecdhe-p256+rsa-2048": round(1.0 / (common + cost["rsa-2048-pss-sign"]), 1),
                },
                "records_mib_per_s": {str(k): round(v, 2) for k, v in records.items()},
                "offloaded_ops": {k: v for k, v in offloaded.items() if v},
            }
        )
    return {
        "settings": {"time": seconds, "trials": trials, "key_schedule_hmacs": KEY_SCHEDULE_HMACS},
        "workload": "tls13",
        "engines": results,
    }
