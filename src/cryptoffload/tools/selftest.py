"""Self-test: known answers through every engine, each on its own, with the counters as witness.

Symmetric algorithms are checked against published vectors (:mod:`cryptoffload.blocks.kat`);
public-key operations, which are randomised or need keys, are checked against OpenSSL directly:
signatures made through the engine must verify in OpenSSL and the other way round, shared
secrets must agree, deterministic outputs must match byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives.asymmetric import ec as c_ec
from cryptography.hazmat.primitives.asymmetric import padding as c_padding
from cryptography.hazmat.primitives.asymmetric import rsa as c_rsa

from cryptoffload import dh, ec, modes, rsa
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.blocks import kat
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.cmac import CMAC
from cryptoffload.core.names import HASH_CLASSES
from cryptoffload.core.ops import RngOp
from cryptoffload.core.policy import Policy
from cryptoffload.core.provider import SOFTWARE, Provider
from cryptoffload.gmac import GMAC
from cryptoffload.hashes import Hash
from cryptoffload.hmac import HMAC

#: Everything an engine is allowed to take during the self-test, whatever the size.
_TAKE_ALL = Policy(min_size={"*": 0})


@dataclass
class Result:
    """One algorithm on one engine: ``status`` is pass, FAIL, declined or fault."""

    engine: str
    algorithm: str
    status: str
    detail: str = ""

    @property
    def failed(self) -> bool:
        """Wrong answers and engine faults fail the self-test; declines do not."""
        return self.status in ("FAIL", "fault")


def _h(x: str) -> bytes:
    return bytes.fromhex(x)


def _cipher_check(alg: str) -> Callable[[Provider], bool]:
    key, iv, pt, ct = map(_h, kat.CIPHER[alg])
    mode_name = alg.rsplit("-", 1)[1]
    mode_cls = {"cbc": modes.CBC, "ctr": modes.CTR, "cfb": modes.CFB, "ofb": modes.OFB}

    def check(p: Provider) -> bool:
        mode = modes.ECB() if mode_name == "ecb" else mode_cls[mode_name](iv)
        enc = Cipher(algorithms.AES(key), mode, provider=p).encryptor()
        dec = Cipher(algorithms.AES(key), mode, provider=p).decryptor()
        return enc.update(pt) + enc.finalize() == ct and dec.update(ct) + dec.finalize() == pt

    return check


def _gcm(p: Provider) -> bool:
    key, nonce, pt, aad, ct, tag = map(_h, kat.GCM)
    g = AESGCM(key, provider=p)
    return g.encrypt(nonce, pt, aad) == ct + tag and g.decrypt(nonce, ct + tag, aad) == pt


def _gmac(p: Provider) -> bool:
    key, nonce, _, aad, _, _ = map(_h, kat.GCM)
    expected = AESGCM(key, provider=Provider([])).encrypt(nonce, b"", aad)
    mac = GMAC(key, nonce, provider=p)
    mac.update(aad)
    return mac.finalize() == expected


def _ccm(p: Provider) -> bool:
    key, nonce, pt, aad, ct, tag = map(_h, kat.CCM)
    c = AESCCM(key, tag_length=len(tag), provider=p)
    return c.encrypt(nonce, pt, aad) == ct + tag and c.decrypt(nonce, ct + tag, aad) == pt


def _hash_check(name: str) -> Callable[[Provider], bool]:
    msg, digest = map(_h, kat.HASH[name])

    def check(p: Provider) -> bool:
        h = Hash(HASH_CLASSES[name](), provider=p)
        h.update(msg)
        return h.finalize() == digest

    return check


def _hmac_check(alg: str) -> Callable[[Provider], bool]:
    key, msg, tag = map(_h, kat.HMAC[alg])

    def check(p: Provider) -> bool:
        h = HMAC(key, HASH_CLASSES[alg[5:]](), provider=p)
        h.update(msg)
        return h.finalize() == tag

    return check


def _cmac(p: Provider) -> bool:
    key, msg, tag = map(_h, kat.CMAC)
    c = CMAC(algorithms.AES(key), provider=p)
    c.update(msg)
    return c.finalize() == tag


class _Keys:
    """Keys made once per self-test run (RSA generation is the slow part)."""

    def __init__(self) -> None:
        self.rsa = c_rsa.generate_private_key(65537, 2048)
        self.ec = {n: c_ec.generate_private_key(c()) for n, c in _CURVES.items()}


_CURVES = {"p256": c_ec.SECP256R1, "p384": c_ec.SECP384R1}


def _rsa_private(keys: _Keys) -> Callable[[Provider], bool]:
    def check(p: Provider) -> bool:
        key = rsa.RSAPrivateKey(keys.rsa, provider=p)
        msg, sha = b"cryptoffload self-test", c_hashes.SHA256()
        v15 = key.sign(msg, c_padding.PKCS1v15(), sha)
        if v15 != keys.rsa.sign(msg, c_padding.PKCS1v15(), sha):
            return False
        pss = c_padding.PSS(c_padding.MGF1(sha), c_padding.PSS.MAX_LENGTH)
        keys.rsa.public_key().verify(key.sign(msg, pss, sha), msg, pss, sha)
        oaep = c_padding.OAEP(c_padding.MGF1(sha), sha, None)
        return key.decrypt(keys.rsa.public_key().encrypt(msg, oaep), oaep) == msg

    return check


def _rsa_public(keys: _Keys) -> Callable[[Provider], bool]:
    def check(p: Provider) -> bool:
        key = rsa.RSAPublicKey(keys.rsa.public_key(), provider=p)
        msg, sha = b"cryptoffload self-test", c_hashes.SHA256()
        key.verify(keys.rsa.sign(msg, c_padding.PKCS1v15(), sha), msg, c_padding.PKCS1v15(), sha)
        oaep = c_padding.OAEP(c_padding.MGF1(sha), sha, None)
        return keys.rsa.decrypt(key.encrypt(msg, oaep), oaep) == msg

    return check


def _ecdsa_sign(keys: _Keys, curve: str) -> Callable[[Provider], bool]:
    def check(p: Provider) -> bool:
        raw = keys.ec[curve]
        sig = ec.EllipticCurvePrivateKey(raw, provider=p).sign(b"msg", ec.ECDSA(c_hashes.SHA256()))
        raw.public_key().verify(sig, b"msg", c_ec.ECDSA(c_hashes.SHA256()))
        return True

    return check


def _ecdsa_verify(keys: _Keys, curve: str) -> Callable[[Provider], bool]:
    def check(p: Provider) -> bool:
        raw = keys.ec[curve]
        sig = raw.sign(b"msg", c_ec.ECDSA(c_hashes.SHA256()))
        pub = ec.EllipticCurvePublicKey(raw.public_key(), provider=p)
        pub.verify(sig, b"msg", ec.ECDSA(c_hashes.SHA256()))
        return True

    return check


def _ecdh(keys: _Keys, curve: str) -> Callable[[Provider], bool]:
    def check(p: Provider) -> bool:
        raw = keys.ec[curve]
        peer = c_ec.generate_private_key(raw.curve)
        ours = ec.EllipticCurvePrivateKey(raw, provider=p).exchange(ec.ECDH(), peer.public_key())
        return ours == peer.exchange(c_ec.ECDH(), raw.public_key())

    return check


def _ffdhe(p: Provider) -> bool:
    a = dh.generate_private_key("ffdhe2048", provider=p)
    b = dh.generate_private_key("ffdhe2048", provider=Provider([]))
    return a.exchange(b.public_key()) == b.exchange(a.public_key())


def _drbg_seed(p: Provider) -> bool:
    seed = p.run(RngOp("drbg", "seed", 48))
    return len(seed) == 48 and seed != bytes(48)


def checks() -> dict[str, Callable[[Provider], bool]]:
    """Algorithm name -> check, for every algorithm the self-test covers."""
    keys = _Keys()
    out: dict[str, Callable[[Provider], bool]] = {alg: _cipher_check(alg) for alg in kat.CIPHER}
    out["aes-128-gcm"] = _gcm
    out["gmac-aes-128"] = _gmac
    out["aes-128-ccm"] = _ccm
    out.update({name: _hash_check(name) for name in kat.HASH})
    out.update({alg: _hmac_check(alg) for alg in kat.HMAC})
    out["cmac-aes-128"] = _cmac
    out["rsa-2048-private"] = _rsa_private(keys)
    out["rsa-2048-public"] = _rsa_public(keys)
    for curve in _CURVES:
        out[f"ecdsa-{curve}-sign"] = _ecdsa_sign(keys, curve)
        out[f"ecdsa-{curve}-verify"] = _ecdsa_verify(keys, curve)
        out[f"ecdh-{curve}"] = _ecdh(keys, curve)
    out["ffdhe2048"] = _ffdhe
    out["drbg"] = _drbg_seed
    return out


def _judge(engine: str, alg: str, ok: bool, error: BaseException | None, p: Provider) -> Result:
    activity = p.counters.snapshot().get(engine, {}).get(alg, {})
    if error is not None:
        return Result(engine, alg, "FAIL", f"{type(error).__name__}: {error}")
    if not ok:
        return Result(engine, alg, "FAIL", "wrong answer")
    if activity.get("faults"):
        return Result(engine, alg, "fault", f"{activity['faults']} fault(s); software answered")
    if engine != SOFTWARE and not activity.get("ops"):
        reasons = ", ".join(sorted(activity.get("declined", {}))) or "not taken"
        return Result(engine, alg, "declined", reasons)
    return Result(engine, alg, "pass")


def coverage(provider: Provider, results: Iterable[Result]) -> list[dict[str, Any]]:
    """Per engine of ``provider`` (asked for or found, software last): whether the self-test
    reached it and, if not, why; if so, how many checks ran and how many failed."""
    tested: dict[str, list[Result]] = {}
    for r in results:
        tested.setdefault(r.engine, []).append(r)
    out = []
    for name in provider.capabilities:
        mine = tested.get(name, [])
        reason = provider.unavailable.get(name, "")
        if not reason and not mine:
            reason = "claims none of the algorithms the self-test covers"
        out.append(
            {
                "name": name,
                "tested": bool(mine),
                "reason": reason,
                "checks": len(mine),
                "failed": sum(r.failed for r in mine),
            }
        )
    return out


def run(engines: Iterable[Any], on_result: Callable[[Result], None] | None = None) -> list[Result]:
    """Run every check on every engine given (and on software); return one Result per pair."""
    all_checks = checks()
    results: list[Result] = []
    for engine in [*engines, None]:
        provider = Provider([engine] if engine is not None else [], policy=_TAKE_ALL)
        name = engine.name if engine is not None else SOFTWARE
        claimed = provider.capabilities[name].algorithms
        for alg, check in all_checks.items():
            if alg not in claimed:
                continue
            ok, error = False, None
            try:
                ok = bool(check(provider))
            except Exception as exc:  # a crash in a check is a failure, reported, not raised
                error = exc
            result = _judge(name, alg, ok, error, provider)
            results.append(result)
            if on_result is not None:
                on_result(result)
    return results
