"""cryptoffload.kdf: HKDF, X9.63, ConcatKDF and KBKDF on cryptoffload's own HMAC, hashes and CMAC.

Every block of a derivation is an op of the provider (``hmac-sha256`` for HKDF-SHA256, ``sha256``
for X9.63, ``cmac-aes-256`` for KBKDF-CMAC): counted, and offered to the engines that claim it.
The answers, the error classes and the single-use rule are `cryptography`'s.
"""

from __future__ import annotations

import binascii
import pathlib
import random
from collections.abc import Callable
from typing import Any

import cryptography_vectors
import pytest
from cryptography.exceptions import AlreadyFinalized, InvalidKey, UnsupportedAlgorithm
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives.ciphers import algorithms
from cryptography.hazmat.primitives.kdf import concatkdf as c_concatkdf
from cryptography.hazmat.primitives.kdf import hkdf as c_hkdf
from cryptography.hazmat.primitives.kdf import kbkdf as c_kbkdf
from cryptography.hazmat.primitives.kdf import x963kdf as c_x963kdf
from doubles import TakeAllEngine

from cryptoffload import Policy, Provider, hashes, using
from cryptoffload.core import directpath
from cryptoffload.core.ops import HashOp, MacOp
from cryptoffload.kdf import KeyDerivationFunction, concatkdf, hkdf, kbkdf, x963kdf

#: A key nobody would write by accident: any 6-byte run of it in text is a leak.
PLANTED = bytes.fromhex("c0ffee5eed5ca1ab1ede7ec7ab1e0dd5f00dfacefeedbeefbaadcafe0ddba115")
HASHES = [
    hashes.SHA1(),
    hashes.SHA256(),
    hashes.SHA384(),
    hashes.SHA512(),
    hashes.SHA3_256(),
    hashes.BLAKE2b(64),
]
CTR = kbkdf.CounterLocation
MODE = kbkdf.Mode.CounterMode
VECTORS = pathlib.Path(cryptography_vectors.__file__).parent


def _h(value: str) -> bytes:
    return binascii.unhexlify(value.strip())


def _records(path: pathlib.Path) -> list[dict[str, str]]:
    """The ``Key = value`` records of an RFC 5869 vector file, one from each ``COUNT``."""
    records: list[dict[str, str]] = []
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if not sep or line.startswith("#"):
            continue
        if key.strip() == "COUNT":
            records.append({})
        records[-1][key.strip().lower()] = value.strip()
    return records


def _takeall() -> tuple[Provider, TakeAllEngine]:
    engine = TakeAllEngine()
    return Provider([engine], policy=Policy(min_size={"*": 0})), engine


def _ops(provider: Provider, engine: str, alg: str) -> int:
    return provider.counters.snapshot().get(engine, {}).get(alg, {}).get("ops", 0)


def _error(call: Callable[[], Any]) -> type[BaseException] | None:
    try:
        call()
    except Exception as exc:  # the class is what the test compares
        return type(exc)
    return None


def _leaks(text: str, secret: bytes = PLANTED) -> bool:
    runs = {secret[i : i + 6] for i in range(len(secret) - 5)}
    return any(r.hex() in text.lower() or repr(r)[2:-1] in text for r in runs)


# -- known answers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "algorithm"),
    [("rfc-5869-HKDF-SHA1.txt", hashes.SHA1()), ("rfc-5869-HKDF-SHA256.txt", hashes.SHA256())],
)
def test_hkdf_gives_the_rfc_5869_answers_through_every_engine_set(name, algorithm, provider):
    records = _records(VECTORS / "KDF" / name)
    assert len(records) >= 3
    for r in records:
        salt, info, ikm = _h(r["salt"]) or None, _h(r["info"]) or None, _h(r["ikm"])
        length = int(r["l"])
        prk = hkdf.HKDF.extract(algorithm, salt, ikm, provider=provider)
        assert prk == _h(r["prk"])
        kdf = hkdf.HKDF(algorithm, length, salt=salt, info=info, provider=provider)
        assert kdf.derive(ikm) == _h(r["okm"])
        expand = hkdf.HKDFExpand(algorithm, length, info, provider=provider)
        assert expand.derive(prk) == _h(r["okm"])


def test_hkdf_expand_gives_rfc_5869_test_case_1():
    prk = _h("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5")
    okm = _h("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    assert hkdf.HKDFExpand(hashes.SHA256(), 42, _h("f0f1f2f3f4f5f6f7f8f9")).derive(prk) == okm


# -- the same answers as cryptography ---------------------------------------------------------


def _pairs(rng: random.Random) -> list[tuple[Callable[[], Any], Callable[[], Any], bytes]]:
    """(cryptography's KDF, ours, key material) over random parameters."""
    out = []
    for algorithm in HASHES:
        c_alg = type(algorithm)(64) if isinstance(algorithm, hashes.BLAKE2b) else type(algorithm)()
        length = rng.choice([1, 16, algorithm.digest_size, algorithm.digest_size + 1, 100])
        salt = rng.randbytes(rng.randrange(0, 80)) or None
        info = rng.randbytes(rng.randrange(0, 40)) or None
        ikm = rng.randbytes(rng.randrange(1, 70))
        out += [
            (
                lambda a=c_alg, n=length, s=salt, i=info: c_hkdf.HKDF(a, n, s, i),
                lambda a=algorithm, n=length, s=salt, i=info: hkdf.HKDF(a, n, s, i),
                ikm,
            ),
            (
                lambda a=c_alg, n=length, i=info: c_hkdf.HKDFExpand(a, n, i),
                lambda a=algorithm, n=length, i=info: hkdf.HKDFExpand(a, n, i),
                ikm,
            ),
            (
                lambda a=c_alg, n=length, i=info: c_x963kdf.X963KDF(a, n, i),
                lambda a=algorithm, n=length, i=info: x963kdf.X963KDF(a, n, i),
                ikm,
            ),
            (
                lambda a=c_alg, n=length, i=info: c_concatkdf.ConcatKDFHash(a, n, i),
                lambda a=algorithm, n=length, i=info: concatkdf.ConcatKDFHash(a, n, i),
                ikm,
            ),
        ]
        if algorithm.name.startswith("sha3"):
            continue  # ConcatKDFHMAC needs a hash with a block size
        out.append(
            (
                lambda a=c_alg, n=length, s=salt, i=info: c_concatkdf.ConcatKDFHMAC(a, n, s, i),
                lambda a=algorithm, n=length, s=salt, i=info: concatkdf.ConcatKDFHMAC(a, n, s, i),
                ikm,
            )
        )
        for location, brk in (
            (CTR.BeforeFixed, None),
            (CTR.AfterFixed, None),
            (CTR.MiddleFixed, 3),
        ):
            rlen, llen = rng.choice([(1, 2), (2, 4), (4, 4), (4, 3)])
            args = (MODE, length, rlen, llen, location, b"label", b"context", None)
            out.append(
                (
                    lambda a=c_alg, x=args, b=brk: c_kbkdf.KBKDFHMAC(a, *x, break_location=b),
                    lambda a=algorithm, x=args, b=brk: kbkdf.KBKDFHMAC(a, *x, break_location=b),
                    ikm,
                )
            )
    for cipher, key_size in ((algorithms.AES, 16), (algorithms.AES, 32), (TripleDES, 24)):
        fixed = rng.randbytes(rng.randrange(1, 40))
        args = (MODE, rng.choice([8, 16, 33]), 4, None, CTR.AfterFixed, None, None, fixed)
        out.append(
            (
                lambda c=cipher, x=args: c_kbkdf.KBKDFCMAC(c, *x),
                lambda c=cipher, x=args: kbkdf.KBKDFCMAC(c, *x),
                rng.randbytes(key_size),
            )
        )
    return out


@pytest.mark.parametrize("seed", range(4))
def test_every_kdf_derives_what_cryptography_derives(seed, provider):
    with using(provider):
        for theirs, ours, key in _pairs(random.Random(seed)):
            expected = theirs().derive(key)
            assert ours().derive(key) == expected
            buf = bytearray(len(expected))
            assert ours().derive_into(bytearray(key), buf) == len(expected)
            assert buf == expected
            ours().verify(memoryview(key), expected)


# -- the ops they are made of -----------------------------------------------------------------


def test_hkdf_sha256_is_hmac_sha256_ops_an_engine_takes():
    provider, engine = _takeall()
    out = hkdf.HKDF(hashes.SHA256(), 42, b"salt", b"info", provider=provider).derive(b"ikm")
    assert out == c_hkdf.HKDF(c_hashes.SHA256(), 42, b"salt", b"info").derive(b"ikm")
    # one extract, then two blocks of expand
    assert _ops(provider, "takeall", "hmac-sha256") == 3
    assert [type(op) for op in engine.seen] == [MacOp] * 3
    assert {op.alg for op in engine.seen} == {"hmac-sha256"}


def test_the_provider_in_force_counts_the_ops_when_none_is_given():
    provider = Provider(["software"])
    with using(provider):
        hkdf.HKDFExpand(hashes.SHA256(), 64, None).derive(bytes(32))
    assert _ops(provider, "software", "hmac-sha256") == 2


def test_x963_and_concat_hash_are_digest_ops_one_a_block():
    provider, engine = _takeall()
    x963kdf.X963KDF(hashes.SHA256(), 48, b"shared", provider=provider).derive(b"z")
    concatkdf.ConcatKDFHash(hashes.SHA256(), 33, None, provider=provider).derive(b"z")
    assert _ops(provider, "takeall", "sha256") == 4
    assert all(isinstance(op, HashOp) for op in engine.seen)


def test_concat_hmac_and_kbkdf_hmac_are_hmac_ops_one_a_block():
    provider, _ = _takeall()
    concatkdf.ConcatKDFHMAC(hashes.SHA512(), 65, None, None, provider=provider).derive(b"z")
    assert _ops(provider, "takeall", "hmac-sha512") == 2
    kdf = kbkdf.KBKDFHMAC(
        hashes.SHA512(), MODE, 129, 4, 4, CTR.BeforeFixed, b"l", b"c", None, provider=provider
    )
    kdf.derive(b"z")
    assert _ops(provider, "takeall", "hmac-sha512") == 5


def test_kbkdf_cmac_is_cmac_ops_one_a_block():
    provider, engine = _takeall()
    args = (MODE, 40, 4, 4, CTR.BeforeFixed, b"l", b"c", None)
    out = kbkdf.KBKDFCMAC(algorithms.AES, *args, provider=provider).derive(bytes(32))
    assert out == c_kbkdf.KBKDFCMAC(algorithms.AES, *args).derive(bytes(32))
    assert _ops(provider, "takeall", "cmac-aes-256") == 3
    assert {op.alg for op in engine.seen} == {"cmac-aes-256"}


def test_a_kdf_of_no_length_runs_no_hash_op():
    provider, engine = _takeall()
    assert x963kdf.X963KDF(hashes.SHA256(), 0, None, provider=provider).derive(b"z") == b""
    assert engine.seen == []


# -- the single-use rule and verify -----------------------------------------------------------


def _each_kdf() -> list[Callable[[], Any]]:
    return [
        lambda: hkdf.HKDF(hashes.SHA256(), 16, None, None),
        lambda: hkdf.HKDFExpand(hashes.SHA256(), 16, None),
        lambda: x963kdf.X963KDF(hashes.SHA256(), 16, None),
        lambda: concatkdf.ConcatKDFHash(hashes.SHA256(), 16, None),
        lambda: concatkdf.ConcatKDFHMAC(hashes.SHA256(), 16, None, None),
        lambda: kbkdf.KBKDFHMAC(hashes.SHA256(), MODE, 16, 4, 4, CTR.BeforeFixed, b"l", b"c", None),
        lambda: kbkdf.KBKDFCMAC(algorithms.AES, MODE, 16, 4, 4, CTR.BeforeFixed, b"l", b"c", None),
    ]


@pytest.mark.parametrize("make", _each_kdf())
def test_a_kdf_derives_once_then_raises_already_finalized(make):
    key = bytes(16)
    kdf = make()
    out = kdf.derive(key)
    with pytest.raises(AlreadyFinalized):
        kdf.derive(key)
    with pytest.raises(AlreadyFinalized):
        kdf.verify(key, out)
    with pytest.raises(AlreadyFinalized):
        kdf.derive_into(key, bytearray(16))
    kdf = make()
    kdf.verify(key, out)
    with pytest.raises(AlreadyFinalized):
        kdf.verify(key, out)


@pytest.mark.parametrize("make", _each_kdf())
def test_verify_raises_invalid_key_on_a_mismatch_and_is_constant_time(make, monkeypatch):
    import hmac as std_hmac

    compared = []
    real = std_hmac.compare_digest
    monkeypatch.setattr(std_hmac, "compare_digest", lambda a, b: compared.append(1) or real(a, b))
    out = make().derive(bytes(16))
    with pytest.raises(InvalidKey, match="Keys do not match"):
        make().verify(bytes(16), out[:-1] + bytes([out[-1] ^ 1]))
    with pytest.raises(InvalidKey):
        make().verify(bytes(16), out + b"\x00")
    assert len(compared) == 2


@pytest.mark.parametrize("make", _each_kdf())
def test_every_kdf_is_a_key_derivation_function(make):
    assert isinstance(make(), KeyDerivationFunction)


# -- derive_into's buffer ---------------------------------------------------------------------


@pytest.mark.parametrize("make", _each_kdf())
def test_derive_into_writes_a_buffer_of_exactly_the_length(make):
    key = bytes(16)
    expected = make().derive(key)
    target = bytearray(20)
    assert make().derive_into(key, memoryview(target)[2:18]) == 16
    assert target[2:18] == expected and target[:2] == target[18:] == b"\x00\x00"


@pytest.mark.parametrize("make", _each_kdf())
@pytest.mark.parametrize("size", [15, 17, 0])
def test_derive_into_a_buffer_of_another_size_is_a_value_error_that_uses_the_kdf(make, size):
    kdf = make()
    with pytest.raises(ValueError, match="buffer must be 16 bytes"):
        kdf.derive_into(bytes(16), bytearray(size))
    # as in cryptography: the object is spent
    with pytest.raises(AlreadyFinalized):
        kdf.derive(bytes(16))


@pytest.mark.parametrize("make", _each_kdf())
def test_derive_into_a_read_only_buffer_is_a_type_error_that_leaves_the_kdf(make):
    kdf = make()
    with pytest.raises(TypeError):
        kdf.derive_into(bytes(16), bytes(16))
    with pytest.raises(TypeError):
        kdf.derive_into(bytes(16), "not a buffer")
    assert len(kdf.derive(bytes(16))) == 16


def test_derive_into_matches_cryptography_on_the_order_of_its_checks():
    ours = kbkdf.KBKDFCMAC(algorithms.AES, MODE, 16, 4, 4, CTR.BeforeFixed, b"l", b"c", None)
    theirs = c_kbkdf.KBKDFCMAC(algorithms.AES, MODE, 16, 4, 4, CTR.BeforeFixed, b"l", b"c", None)
    # KBKDF keys its PRF before it looks at the buffer: a bad key wins over a bad buffer
    assert _error(lambda: ours.derive_into(b"short", bytearray(3))) is ValueError
    assert _error(lambda: theirs.derive_into(b"short", bytearray(3))) is ValueError
    assert _error(lambda: ours.derive(bytes(16))) is AlreadyFinalized
    assert _error(lambda: theirs.derive(bytes(16))) is AlreadyFinalized


# -- errors as cryptography's -----------------------------------------------------------------


def _bad(mod: Any, h: Any, alg: Any) -> list[Callable[[], Any]]:
    """Misuses, each a call on ``mod``'s KDFs (ours or cryptography's)."""
    k = mod.kbkdf if hasattr(mod, "kbkdf") else None
    kb = (k.Mode.CounterMode, 32, 4, 4, k.CounterLocation.BeforeFixed, b"l", b"c", None)
    mid = (k.Mode.CounterMode, 32, 4, 4, k.CounterLocation.MiddleFixed, b"l", b"c", None)
    return [
        lambda: mod.hkdf.HKDF(h.SHA256(), 255 * 32 + 1, None, None),
        lambda: mod.hkdf.HKDF(h.SHA256(), -1, None, None),
        lambda: mod.hkdf.HKDF(h.SHA256(), 2**70, None, None),
        lambda: mod.hkdf.HKDF(h.SHA256(), 1.5, None, None),
        lambda: mod.hkdf.HKDF(h.SHA256(), 16, bytearray(b"s"), None),
        lambda: mod.hkdf.HKDF(h.SHA256(), 16, None, "info"),
        lambda: mod.hkdf.HKDF("sha256", 16, None, None),
        lambda: mod.hkdf.HKDF(h.SHAKE128(16), 16, None, None).derive(b"k"),
        lambda: mod.hkdf.HKDF(h.SHA256(), 16, None, None).derive("k"),
        lambda: mod.hkdf.HKDF(h.SHA256(), 16, None, None).verify(b"k", "x"),
        lambda: mod.hkdf.HKDF.extract(h.SHA256(), "salt", b"k"),
        lambda: mod.hkdf.HKDF.extract(h.SHA256(), None, "k"),
        lambda: mod.hkdf.HKDFExpand(h.SHA256(), 255 * 32 + 1, None),
        lambda: mod.hkdf.HKDFExpand(h.SHA256(), 16, "info"),
        lambda: mod.x963kdf.X963KDF(h.SHA256(), 32 * (2**32 - 1) + 1, None),
        lambda: mod.x963kdf.X963KDF(h.SHA256(), 16, "shared"),
        lambda: mod.x963kdf.X963KDF(h.SHA256(), 2**64, None),
        lambda: mod.concatkdf.ConcatKDFHash(h.SHA256(), 32 * (2**32 - 1) + 1, None),
        lambda: mod.concatkdf.ConcatKDFHMAC(h.SHA3_256(), 16, None, None),
        lambda: mod.concatkdf.ConcatKDFHMAC(h.SHA256(), 16, "salt", None),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), None, *kb[1:]),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), *kb[:4], None, *kb[5:]),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), *kb[:2], 5, *kb[3:]),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), *kb[:2], 0, *kb[3:]),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), *kb[:3], 0, *kb[4:]),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), *kb[:3], None, *kb[4:]),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), *kb[:3], b"l", *kb[4:]),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), *kb[:7], b"fixed"),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), *kb[:5], "label", *kb[6:]),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), *kb, break_location=0),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), *mid),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), *mid, break_location=-1),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), *mid, break_location=40).derive(b"k"),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), *mid, None, 0),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA1(), kb[0], 2**40, *kb[2:]),
        lambda: mod.kbkdf.KBKDFHMAC(h.SHA256(), kb[0], 32, 4, 1, *kb[4:]).derive(b"k"),
        lambda: mod.kbkdf.KBKDFHMAC("sha256", *kb),
        lambda: mod.kbkdf.KBKDFCMAC(alg.AES(bytes(16)), *kb),
        lambda: mod.kbkdf.KBKDFCMAC(alg.ChaCha20, *kb),
        lambda: mod.kbkdf.KBKDFCMAC(alg.AES, kb[0], 16 * 2**8, 1, *kb[3:]),
        lambda: mod.kbkdf.KBKDFCMAC(alg.AES, *kb).derive(b"material"),
        lambda: mod.kbkdf.KBKDFCMAC(alg.AES, *kb).derive("material"),
    ]


class _Ours:
    hkdf, x963kdf, concatkdf, kbkdf = hkdf, x963kdf, concatkdf, kbkdf


class _Theirs:
    hkdf, x963kdf, concatkdf, kbkdf = c_hkdf, c_x963kdf, c_concatkdf, c_kbkdf


@pytest.mark.parametrize("index", range(len(_bad(_Ours, hashes, algorithms))))
def test_each_misuse_raises_the_error_class_cryptography_raises(index):
    theirs = _error(_bad(_Theirs, c_hashes, algorithms)[index])
    ours = _error(_bad(_Ours, hashes, algorithms)[index])
    assert theirs is not None
    assert ours is theirs


def test_an_unsupported_hash_is_unsupported_algorithm():
    class Odd(c_hashes.HashAlgorithm):
        name, digest_size, block_size = "odd", 32, 64

    with pytest.raises(UnsupportedAlgorithm):
        kbkdf.KBKDFHMAC(Odd(), MODE, 32, 4, 4, CTR.BeforeFixed, b"l", b"c", None)
    with pytest.raises(UnsupportedAlgorithm):
        hkdf.HKDF(Odd(), 32, None, None).derive(b"k")


def test_break_location_is_keyword_only_and_backend_and_provider_are_taken():
    with pytest.raises(TypeError, match=r"positional arguments but \d+ were given\Z"):
        kbkdf.KBKDFHMAC(hashes.SHA256(), MODE, 32, 4, 4, CTR.MiddleFixed, b"l", b"c", None, None, 0)
    provider = Provider(["software"])
    kdf = hkdf.HKDF(hashes.SHA256(), 16, None, None, object(), provider=provider)
    kdf.derive(b"k")
    assert _ops(provider, "software", "hmac-sha256") == 2
    with pytest.raises(TypeError):
        hkdf.HKDFExpand(hashes.SHA256(), 16, None, None, provider)  # type: ignore[misc]


def test_extract_is_a_static_method_as_in_cryptography():
    via_class = hkdf.HKDF.extract(hashes.SHA256(), b"salt", b"ikm")
    via_object = hkdf.HKDF(hashes.SHA256(), 16, None, None).extract(
        hashes.SHA256(), b"salt", b"ikm"
    )
    assert via_class == via_object == c_hkdf.HKDF.extract(c_hashes.SHA256(), b"salt", b"ikm")
    kdf = hkdf.HKDF(hashes.SHA256(), 16, b"salt", None)
    assert kdf._extract(b"ikm") == via_class


def test_the_enums_are_cryptographys():
    assert kbkdf.Mode is c_kbkdf.Mode
    assert kbkdf.CounterLocation is c_kbkdf.CounterLocation


# -- no key in sight --------------------------------------------------------------------------


def test_no_key_material_salt_or_derived_key_shows_in_a_repr_or_an_error():
    objects = [
        hkdf.HKDF(hashes.SHA256(), 32, PLANTED, PLANTED),
        hkdf.HKDFExpand(hashes.SHA256(), 32, PLANTED),
        x963kdf.X963KDF(hashes.SHA256(), 32, PLANTED),
        concatkdf.ConcatKDFHash(hashes.SHA256(), 32, PLANTED),
        concatkdf.ConcatKDFHMAC(hashes.SHA256(), 32, PLANTED, PLANTED),
        kbkdf.KBKDFHMAC(hashes.SHA256(), MODE, 32, 4, None, CTR.AfterFixed, None, None, PLANTED),
    ]
    texts = []
    for kdf in objects:
        texts.append(repr(kdf))
        try:
            kdf.verify(PLANTED, b"\x00" * 32)
        except InvalidKey as exc:
            texts.append(str(exc))
        try:
            kdf.derive(PLANTED)
        except AlreadyFinalized as exc:
            texts.append(str(exc))
    mid = kbkdf.KBKDFHMAC(
        hashes.SHA256(), MODE, 32, 4, None, CTR.MiddleFixed, None, None, PLANTED, break_location=99
    )
    try:
        mid.derive(PLANTED)
    except ValueError as exc:
        texts.append(str(exc))
    assert len(texts) == 19
    assert not any(_leaks(t) for t in texts), texts


# -- HKDF where no engine claims the HMAC: cryptography's HKDF, the ops counted as before --------


@pytest.fixture
def software_default():
    import cryptoffload

    provider = Provider([])
    cryptoffload.set_default_provider(provider)
    yield provider
    cryptoffload.set_default_provider(None)


@pytest.mark.skipif(not directpath.COMPILED, reason="the compiled twin runs no Python by design")
def test_hkdf_on_a_software_only_lane_runs_no_python_of_ours(software_default):
    import os
    import sys

    import cryptoffload

    ours = os.path.dirname(cryptoffload.__file__)
    seen: list[str] = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(ours):
            seen.append(frame.f_code.co_qualname)

    def derive():
        return hkdf.HKDF(hashes.SHA256(), 32, None, b"info").derive(bytes(32))

    derive()  # the first HKDF of its hash is made the slow way, which opens the direct path
    sys.setprofile(profile)
    try:
        derive()
    finally:
        sys.setprofile(None)
    assert seen == []


@pytest.mark.parametrize("algorithm", HASHES, ids=lambda a: a.name)
@pytest.mark.parametrize("length", [0, 1, 32, 80])
def test_hkdf_on_the_direct_path_counts_what_the_hmac_path_counts(
    software_default, algorithm, length
):
    explicit = Provider([])  # a provider given: the HMAC path, op by op
    for salt, info in [(None, None), (b"salt", b"info")]:
        for _ in range(2):
            ref = c_hkdf.HKDF(algorithm, length, salt, info).derive(b"ikm")
            assert hkdf.HKDF(algorithm, length, salt, info).derive(b"ikm") == ref
            kdf = hkdf.HKDF(algorithm, length, salt, info, provider=explicit)
            assert kdf.derive(b"ikm") == ref
    direct = software_default.counters.snapshot()["software"]
    assert direct == explicit.counters.snapshot()["software"]
    assert len(direct) == 1 and next(iter(direct)).startswith("hmac-")


def test_hkdf_made_by_keyword_keeps_cryptographys_rules(software_default):
    for _ in range(2):
        kdf = hkdf.HKDF(algorithm=hashes.SHA256(), length=16, salt=b"s", info=b"i")
        assert kdf.derive(b"ikm") == c_hkdf.HKDF(c_hashes.SHA256(), 16, b"s", b"i").derive(b"ikm")
        with pytest.raises(AlreadyFinalized):
            kdf.derive(b"ikm")
        other = hkdf.HKDF(hashes.SHA256(), 16, b"s", b"i")
        with pytest.raises(InvalidKey):
            other.verify(b"ikm", bytes(16))
        buf = bytearray(16)
        assert hkdf.HKDF(hashes.SHA256(), 16, b"s", b"i").derive_into(b"ikm", buf) == 16
        assert bytes(buf) == c_hkdf.HKDF(c_hashes.SHA256(), 16, b"s", b"i").derive(b"ikm")
    with pytest.raises(ValueError, match="Cannot derive keys larger than"):
        hkdf.HKDF(hashes.SHA256(), 255 * 32 + 1, None, None)
    with pytest.raises(TypeError):
        hkdf.HKDF(hashes.SHA256(), 16, "salt", None)
    with pytest.raises(TypeError):
        hkdf.HKDF(hashes.SHA256(), 16, None, None).derive("text")


UNSALTED_HASHES = [
    c_hashes.SHA1(),
    c_hashes.SHA224(),
    c_hashes.SHA256(),
    c_hashes.SHA384(),
    c_hashes.SHA512(),
    c_hashes.SHA512_224(),
    c_hashes.SHA512_256(),
    c_hashes.SHA3_256(),
    c_hashes.SHA3_512(),
    c_hashes.BLAKE2b(64),
    c_hashes.BLAKE2s(32),
]


@pytest.mark.parametrize("algorithm", UNSALTED_HASHES, ids=lambda a: a.name)
def test_hkdf_gives_cryptographys_key_for_every_hash_with_a_salt_and_without(algorithm) -> None:
    from cryptoffload.kdf import hkdf as our_hkdf

    size = algorithm.digest_size
    for length in (1, size, size + 1, 3 * size - 1, 255 * size):
        for salt, info in [(None, None), (b"", b""), (b"s" * 200, b"context"), (None, bytes(256))]:
            for key_material in (b"", b"k", bytes(100)):
                expected = c_hkdf.HKDF(algorithm, length, salt, info).derive(key_material)
                ours = our_hkdf.HKDF(algorithm, length, salt, info).derive(key_material)
                assert ours == expected, (length, salt, info, key_material)
    entry = our_hkdf.HKDF._direct_path[0].get(algorithm.__class__)
    assert entry is not None  # the direct path knows the hash: the fast path was taken
    if algorithm.name.startswith("sha") and algorithm.name != "sha512-224":
        assert entry[2] is not None, "Python's OpenSSL has this hash: HKDF runs on its HMAC"


def test_hkdf_checks_pythons_hmac_against_cryptographys_once_per_hash(monkeypatch) -> None:
    from cryptoffload.kdf import hkdf as our_hkdf

    checked = []
    check = our_hkdf._checked_python_hmac
    monkeypatch.setattr(our_hkdf, "_PYTHON_HMACS", {})
    monkeypatch.setattr(
        our_hkdf,
        "_checked_python_hmac",
        lambda algorithm: checked.append(algorithm) or check(algorithm),
    )
    first = our_hkdf._python_hmac(c_hashes.SHA384())
    assert our_hkdf._python_hmac(c_hashes.SHA384()) is first
    assert len(checked) == 1 and first is not None and first[1] == "sha384"
