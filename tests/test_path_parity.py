"""Every path gives the answer the user asked for: every parameter reaches the Op and every engine.

Regressions of a review: with an engine claiming ECDSA (even one that then declines), a
deterministic signature came back signed with a random nonce; ``update_into`` with a buffer too
small for `cryptography`'s rule raised on the direct path only. Each case runs on every engine
set: software alone, an engine taking everything, a chaos engine, an engine that declines
everything, and one that declines the parameters it cannot honour.
"""

from __future__ import annotations

import hashlib
from typing import Any

import conftest
import pytest
import softhsm
from conftest import ENGINE_SETS
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
from cryptography.hazmat.primitives.ciphers import Cipher as _Cipher
from doubles import DecliningEngine, TakeAllEngine
from vectors.loaders import ecdsa_rfc6979_vectors, hash_class

from cryptoffload import Policy, Provider, ec, serialization
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.errors import Unavailable
from cryptoffload.modes import CBC, CFB, CTR, ECB, OFB

ALL = Policy(min_size={"*": 0})


class NoDeterministicEngine(TakeAllEngine):
    """Takes everything but RFC 6979 signatures, which it declines as an engine must."""

    def run(self, op: Any) -> Any:
        if op.family == "ecdsa" and op.deterministic:
            self.seen.append(op)
            raise Unavailable("unsupported", "no RFC 6979 nonces")
        return super().run(op)


PATHS = {
    **ENGINE_SETS,
    "decliner": lambda: Provider([DecliningEngine()], policy=ALL),
    "no-deterministic": lambda: Provider([NoDeterministicEngine("nodet")], policy=ALL),
}


@pytest.fixture(params=list(PATHS))
def any_provider(request: pytest.FixtureRequest) -> Provider:
    """The conftest engine sets, an engine declining everything, one declining RFC 6979."""
    return PATHS[request.param]()


RFC6979 = ecdsa_rfc6979_vectors()


def test_the_pkcs11_engine_set_needs_no_fixture_run_before_it(monkeypatch):
    # Run alone, this file reached the engine set before any test had asked for the token.
    if "pkcs11-softhsm" not in ENGINE_SETS:
        pytest.skip(softhsm.why_missing() or "no SoftHSM")
    monkeypatch.delitem(conftest._PKCS11_ENGINES, "spec", raising=False)
    provider = ENGINE_SETS["pkcs11-softhsm"]()
    assert not provider.unavailable and provider.engines[0].name.startswith("pkcs11:")


@pytest.mark.parametrize(
    "record", RFC6979, ids=[f"{r['curve']}-{r['hash']}-{r['msg'].decode()}" for r in RFC6979]
)
def test_deterministic_ecdsa_gives_rfc6979s_signature_on_every_path(any_provider, record):
    key = serialization.load_pem_private_key(record["key_pem"], None, provider=any_provider)
    hash_alg = hash_class(record["hash"])()
    algorithm = ec.ECDSA(hash_alg, deterministic_signing=True)
    assert key.sign(record["msg"], algorithm) == record["signature"]
    # The same through Prehashed: the digest is the message.
    digest = hashlib.new(record["hash"], record["msg"]).digest()
    prehashed = ec.ECDSA(Prehashed(hash_alg), deterministic_signing=True)
    assert key.sign(digest, prehashed) == record["signature"]
    key.public_key().verify(record["signature"], record["msg"], ec.ECDSA(hash_alg))


def test_an_engine_that_cannot_honour_rfc6979_declines_and_software_signs():
    record = RFC6979[0]
    engine = NoDeterministicEngine("nodet")
    p = Provider([engine], policy=ALL)
    key = serialization.load_pem_private_key(record["key_pem"], None, provider=p)
    algorithm = ec.ECDSA(hash_class(record["hash"])(), deterministic_signing=True)
    assert key.sign(record["msg"], algorithm) == record["signature"]
    cell = p.counters.snapshot()
    assert cell["nodet"]["ecdsa-p192-sign"] == {
        "ops": 0,
        "bytes": 0,
        "declined": {"unsupported": 1},
        "faults": 0,
    }
    assert cell["software"]["ecdsa-p192-sign"]["ops"] == 1
    assert [op.deterministic for op in engine.seen] == [True]
    # A random-nonce signature is the engine's to make.
    key.sign(record["msg"], ec.ECDSA(hash_class(record["hash"])()))
    assert p.counters.snapshot()["nodet"]["ecdsa-p192-sign"]["ops"] == 1


def test_random_nonce_signatures_differ_and_verify_on_every_path(any_provider):
    key = ec.generate_private_key(ec.SECP256R1(), provider=any_provider)
    algorithm = ec.ECDSA(hash_class("sha256")())
    first, second = key.sign(b"m", algorithm), key.sign(b"m", algorithm)
    assert first != second
    for signature in (first, second):
        key.public_key().verify(signature, b"m", algorithm)


KEY = bytes(range(16))
IV = bytes(range(16, 32))
MODES = {
    "ecb": lambda: ECB(),
    "cbc": lambda: CBC(IV),
    "ctr": lambda: CTR(IV),
    "cfb": lambda: CFB(IV),
    "ofb": lambda: OFB(IV),
}


@pytest.mark.parametrize("mode", ["ecb", "cbc"])
def test_update_into_a_buffer_without_room_for_a_block_raises_on_every_path(any_provider, mode):
    ctx = Cipher(algorithms.AES(KEY), MODES[mode](), provider=any_provider).encryptor()
    with pytest.raises(ValueError, match="buffer must be at least 22 bytes"):
        ctx.update_into(bytes(7), bytearray(16))
    # Nothing was consumed: the same stream as cryptography's from here.
    reference = _Cipher(algorithms.AES(KEY), MODES[mode]()).encryptor()
    ours, theirs = bytearray(64), bytearray(64)
    n = ctx.update_into(bytes(range(7)), ours)
    assert n == reference.update_into(bytes(range(7)), theirs) == 0
    n = ctx.update_into(bytes(range(41)), ours)
    assert n == reference.update_into(bytes(range(41)), theirs) == 48
    assert ours[:n] == theirs[:n]


@pytest.mark.parametrize("encrypt", [True, False], ids=["encrypt", "decrypt"])
@pytest.mark.parametrize("mode", list(MODES))
def test_update_into_chunks_give_cryptographys_bytes_and_counts_on_every_path(
    any_provider, mode, encrypt
):
    ours = Cipher(algorithms.AES(KEY), MODES[mode](), provider=any_provider)
    theirs = _Cipher(algorithms.AES(KEY), MODES[mode]())
    a = ours.encryptor() if encrypt else ours.decryptor()
    b = theirs.encryptor() if encrypt else theirs.decryptor()
    data = bytes(range(256)) * 2
    got, want = bytearray(), bytearray()
    for start, end in ((0, 7), (7, 16), (16, 50), (50, 50), (50, 512)):
        chunk = data[start:end]
        size = len(chunk) + 15
        for out, ctx in ((got, a), (want, b)):
            buf = bytearray(size)
            n = ctx.update_into(chunk, buf)
            out += buf[:n]
    assert got == want
    assert a.finalize() == b.finalize()


@pytest.mark.parametrize("mode", list(MODES))
def test_update_into_hands_the_callers_buffer_to_the_engine_when_nothing_is_held(mode):
    engine = TakeAllEngine()
    p = Provider([engine], policy=ALL)
    ctx = Cipher(algorithms.AES(KEY), MODES[mode](), provider=p).encryptor()
    reference = _Cipher(algorithms.AES(KEY), MODES[mode]()).encryptor()
    buf = bytearray(64 + 15)
    assert ctx.update_into(bytes(64), buf) == 64
    assert engine.seen[-1].out is not None  # written in place, not copied back
    assert bytes(buf[:64]) == reference.update(bytes(64))
    # Data that leaves a partial block behind goes through a copy; the stream still agrees.
    n = ctx.update_into(bytes(20), buf)
    assert bytes(buf[:n]) == reference.update(bytes(20))
