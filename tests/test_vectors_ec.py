"""Elliptic curves through every engine set: CAVP ECDSA SigVer, PKV and KeyPair, the ECC CDH
KAS validity vectors, sign/verify and ECDH round trips on every curve we carry, and bad peer
keys that must be refused before any engine sees an operation.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from counting import assert_counted, assert_untouched, cells, takeall_provider
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec as _ec
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed, encode_dss_signature
from doubles import ChaosEngine
from vectors.loaders import (
    ecdh_kas_vectors,
    ecdsa_keypair_vectors,
    ecdsa_pkv_vectors,
    ecdsa_sigver_vectors,
    hash_class,
)

from cryptoffload import ec
from cryptoffload.blocks.curves import (
    CRYPTOGRAPHY_CLASSES,
    CURVES,
    IN_CRYPTOGRAPHY,
    Curve,
    short_name,
)
from cryptoffload.core import validate
from cryptoffload.core.ops import EcdhOp

#: Every curve in the curve table that the installed `cryptography` has, as its object.
CURVE_OBJECTS: dict[str, _ec.EllipticCurve] = {
    name: CRYPTOGRAPHY_CLASSES[c.openssl_name]() for name, c in IN_CRYPTOGRAPHY.items()
}
CURVE_NAMES = list(CURVE_OBJECTS)
each_curve = pytest.mark.parametrize("name", CURVE_NAMES)

NIST_CURVES = ["P-192", "P-224", "P-256", "P-384", "P-521"]
each_nist_curve = pytest.mark.parametrize("nist", NIST_CURVES)

MESSAGE = b"cryptoffload ecdsa round trip"


def _short(nist: str) -> str:
    return "p" + nist.removeprefix("P-")


def _encoded_point(table: Curve, x: int, y: int) -> bytes | None:
    """The uncompressed SEC 1 point, or None when a coordinate cannot fit the fixed width."""
    width = table.size
    if min(x, y) < 0 or max(x, y).bit_length() > 8 * width:
        return None
    return b"\x04" + x.to_bytes(width, "big") + y.to_bytes(width, "big")


def _reason_code(record: dict[str, Any]) -> int:
    return int(record["reason"].split("-", 1)[0].strip())


def test_curve_objects_cover_the_curve_table():
    assert {"p256", "p521", "secp256k1", "brainpoolp512r1"} <= set(CURVE_OBJECTS) <= set(CURVES)
    for name, curve in CURVE_OBJECTS.items():
        assert short_name(curve) == name


# --------------------------------------------------------------------------- CAVP SigVer


@each_nist_curve
def test_ecdsa_sigver_vectors_verify_or_raise_invalid_signature_as_recorded(provider, nist):
    curve = CURVE_OBJECTS[_short(nist)]
    records = [r for r in ecdsa_sigver_vectors() if r["curve"] == nist]
    assert records and {r["result"] for r in records} == {True, False}
    wrong = []
    for i, r in enumerate(records):
        numbers = _ec.EllipticCurvePublicNumbers(r["qx"], r["qy"], curve)
        key = ec.EllipticCurvePublicKey(numbers.public_key(), provider=provider)
        signature = encode_dss_signature(r["r"], r["s"])
        hash_cls = hash_class(r["hash"])
        # SigVer's Msg is the message: hashed here with the record's hash, and once prehashed.
        digest = hashlib.new(r["hash"], r["msg"]).digest()
        answers = []
        for data, algorithm in (
            (r["msg"], ec.ECDSA(hash_cls())),
            (digest, ec.ECDSA(Prehashed(hash_cls()))),
        ):
            try:
                key.verify(signature, data, algorithm)
                answers.append(True)
            except InvalidSignature:
                answers.append(False)
        if answers != [r["result"]] * 2:
            wrong.append((i, r["hash"], r["reason"], answers))
    assert not wrong, f"{len(wrong)} records answered wrongly, e.g. {wrong[:5]}"
    assert_counted(provider, f"ecdsa-{_short(nist)}-verify", 2 * len(records))
    if any(isinstance(engine, ChaosEngine) for engine in provider.engines):
        cell = cells(provider, f"ecdsa-{_short(nist)}-verify")["chaos"]
        assert cell["ops"] and cell["faults"] and cell["declined"]


# --------------------------------------------------------------------------- CAVP PKV


@each_nist_curve
def test_ecdsa_pkv_vectors_accept_valid_points_and_refuse_invalid_before_any_engine(nist):
    provider, engine = takeall_provider()
    short = _short(nist)
    curve, table = CURVE_OBJECTS[short], CURVES[short]
    records = [r for r in ecdsa_pkv_vectors() if r["curve"] == nist]
    assert {_reason_code(r) for r in records} == {0, 1, 2}
    own = ec.derive_private_key(0xC0FFEE, curve, provider=provider)
    exchanges = 0
    for r in records:
        x, y = r["qx"], r["qy"]
        encoded = _encoded_point(table, x, y)
        if r["valid"]:
            validate.ec_public_point(table, x, y)
            numbers = _ec.EllipticCurvePublicNumbers(x, y, curve)
            key = ec.EllipticCurvePublicKey(numbers.public_key(), provider=provider)
            key.validate()
            assert ec.EllipticCurvePublicKey.from_encoded_point(curve, encoded) == key
            own.exchange(ec.ECDH(), key)  # a valid point is a usable peer
            exchanges += 1
            continue
        # Both failure kinds are refused by our SP 800-56A check on the coordinates received...
        with pytest.raises(ValueError):
            validate.ec_public_point(table, x, y)
        # ...and by OpenSSL when they arrive as a SEC 1 point (if they fit its fixed width).
        if encoded is not None:
            with pytest.raises(ValueError):
                ec.EllipticCurvePublicKey.from_encoded_point(curve, encoded, provider=provider)
        if _reason_code(r) == 2:  # not on the curve: `cryptography` refuses the numbers too
            with pytest.raises(ValueError):
                _ec.EllipticCurvePublicNumbers(x, y, curve).public_key()
    assert [op.alg for op in engine.seen] == [f"ecdh-{short}"] * exchanges
    assert_counted(provider, f"ecdh-{short}", exchanges)


@each_nist_curve
def test_pkv_out_of_range_numbers_reach_an_engine_only_reduced_onto_the_curve(nist):
    """`cryptography` 48 reduces EllipticCurvePublicNumbers coordinates mod p instead of refusing
    them; the key it builds then holds a valid point, and that point is all an engine could see.
    (The out-of-range form itself is refused above: by validate.ec_public_point, or as bytes.)"""
    short = _short(nist)
    curve, table = CURVE_OBJECTS[short], CURVES[short]
    records = [r for r in ecdsa_pkv_vectors() if r["curve"] == nist and _reason_code(r) == 1]
    assert records
    for r in records:
        assert r["qx"] >= table.p or r["qy"] >= table.p
        try:
            built = _ec.EllipticCurvePublicNumbers(r["qx"], r["qy"], curve).public_key()
        except ValueError:
            continue
        held = built.public_numbers()
        assert (held.x, held.y) == (r["qx"] % table.p, r["qy"] % table.p)
        ec.EllipticCurvePublicKey(built).validate()


# --------------------------------------------------------------------------- CAVP KeyPair


def test_ecdsa_keypair_vectors_derive_the_recorded_public_point_and_sign(provider):
    records = ecdsa_keypair_vectors()
    if not records:
        pytest.skip("KeyPair.rsp is not in this cryptography_vectors")
    per_curve: dict[str, int] = {}
    for r in records:
        short = _short(r["curve"])
        curve = CURVE_OBJECTS[short]
        key = ec.derive_private_key(r["d"], curve, provider=provider)
        assert key.private_numbers().private_value == r["d"]
        numbers = key.public_key().public_numbers()
        assert (numbers.x, numbers.y) == (r["qx"], r["qy"])
        signature = key.sign(MESSAGE, ec.ECDSA(hashes.SHA256()))
        recorded = _ec.EllipticCurvePublicNumbers(r["qx"], r["qy"], curve).public_key()
        recorded.verify(signature, MESSAGE, _ec.ECDSA(hashes.SHA256()))
        per_curve[short] = per_curve.get(short, 0) + 1
    assert set(per_curve) == {_short(c) for c in NIST_CURVES}
    for short, n in per_curve.items():
        assert_counted(provider, f"ecdsa-{short}-sign", n)


# --------------------------------------------------------------------------- CAVP ECC CDH KAS


@each_nist_curve
def test_ecdh_kas_vectors_agree_or_fail_for_the_recorded_reason(provider, nist):
    """Reason codes: 0 and 13 pass (13: Z keeps its leading zero nibble); 1 and 2 are the peer's
    (CAVS's) static key failing PKV, refused before any engine runs; 5 and 6 are the IUT's own
    static public key failing PKV; 7 is a changed IUT private key (key pair inconsistent, or d
    out of range and refused by derive_private_key); 8 is a changed Z."""
    short = _short(nist)
    curve, table = CURVE_OBJECTS[short], CURVES[short]
    records = [r for r in ecdh_kas_vectors() if r["curve"] == nist]
    assert {_reason_code(r) for r in records} == {0, 1, 2, 5, 6, 7, 8, 13}
    exchanges = 0
    for r in records:
        code = _reason_code(r)
        encoded = _encoded_point(table, r["peer_qx"], r["peer_qy"])
        if code in (1, 2):
            with pytest.raises(ValueError):
                validate.ec_public_point(table, r["peer_qx"], r["peer_qy"])
            if encoded is not None:
                with pytest.raises(ValueError):
                    ec.EllipticCurvePublicKey.from_encoded_point(curve, encoded, provider=provider)
            continue
        peer = ec.EllipticCurvePublicKey.from_encoded_point(curve, encoded, provider=provider)
        peer.validate()
        d = r["iut_private"]
        if code == 7 and not 0 < d < table.n:
            with pytest.raises(ValueError):
                ec.derive_private_key(d, curve, provider=provider)
            continue
        key = ec.derive_private_key(d, curve, provider=provider)
        own = key.public_key().public_numbers()
        consistent = (own.x, own.y) == (r["iut_qx"], r["iut_qy"])
        if code in (5, 6):
            # The IUT's recorded public key is invalid; ours comes from d, so it is never used.
            with pytest.raises(ValueError):
                validate.ec_public_point(table, r["iut_qx"], r["iut_qy"])
            assert not consistent
            continue
        z = key.exchange(ec.ECDH(), peer)
        exchanges += 1
        assert len(z) == table.size
        assert z == key.to_cryptography().exchange(_ec.ECDH(), peer.to_cryptography())
        if r["result"]:
            assert consistent and z == r["z"], (r["count"], r["role"])
            assert hashlib.new(r["hash"], z).digest() == r["hash_z"]
            if code == 13:
                assert z[0] < 0x10
        elif code == 7:
            assert not consistent and z != r["z"]
        elif code == 8:
            assert consistent and z != r["z"]
        else:
            pytest.fail(f"unexpected KAS failure reason {r['reason']!r}")
    assert_counted(provider, f"ecdh-{short}", exchanges)


# --------------------------------------------------------------------------- round trips


@each_curve
def test_ecdsa_sign_verify_round_trips_with_cryptography_on_every_curve(provider, name):
    curve = CURVE_OBJECTS[name]
    key = ec.generate_private_key(curve, provider=provider)
    pub = key.public_key()
    plain_pub = pub.to_cryptography()
    plain_key = key.to_cryptography()
    algorithms = [hashes.SHA256(), hashes.SHA384(), hashes.SHA512(), hashes.SHA1()]
    for algorithm in algorithms:
        ours = key.sign(MESSAGE, ec.ECDSA(algorithm))
        plain_pub.verify(ours, MESSAGE, _ec.ECDSA(algorithm))
        pub.verify(ours, MESSAGE, ec.ECDSA(algorithm))
        theirs = plain_key.sign(MESSAGE, _ec.ECDSA(algorithm))
        pub.verify(theirs, MESSAGE, ec.ECDSA(algorithm))
    digest = hashlib.sha256(MESSAGE).digest()
    prehashed = key.sign(digest, ec.ECDSA(Prehashed(hashes.SHA256())))
    pub.verify(prehashed, MESSAGE, ec.ECDSA(hashes.SHA256()))
    assert_counted(provider, f"ecdsa-{name}-sign", len(algorithms) + 1)
    assert_counted(provider, f"ecdsa-{name}-verify", 2 * len(algorithms) + 1)


@each_curve
def test_ecdsa_tampered_signatures_raise_invalid_signature_on_every_curve(provider, name):
    key = ec.generate_private_key(CURVE_OBJECTS[name], provider=provider)
    pub = key.public_key()
    signature = key.sign(MESSAGE, ec.ECDSA(hashes.SHA256()))
    flipped = bytearray(signature)
    flipped[-1] ^= 0x01
    other = ec.generate_private_key(CURVE_OBJECTS[name], provider=provider).public_key()
    n = CURVES[name].n
    attempts = [
        (pub, bytes(flipped), MESSAGE, hashes.SHA256()),
        (pub, signature, MESSAGE + b".", hashes.SHA256()),
        (pub, signature, MESSAGE, hashes.SHA384()),
        (other, signature, MESSAGE, hashes.SHA256()),
        (pub, encode_dss_signature(n, 1), MESSAGE, hashes.SHA256()),
        (pub, encode_dss_signature(1, n), MESSAGE, hashes.SHA256()),
        (pub, b"\x30\x00", MESSAGE, hashes.SHA256()),  # not even a pair of integers
    ]
    for verifier, sig, data, algorithm in attempts:
        with pytest.raises(InvalidSignature):
            verifier.verify(sig, data, ec.ECDSA(algorithm))
    assert_counted(provider, f"ecdsa-{name}-sign", 1)
    assert_counted(provider, f"ecdsa-{name}-verify", len(attempts))


@each_curve
def test_ecdh_agreement_both_ways_matches_cryptography_on_every_curve(provider, name):
    curve = CURVE_OBJECTS[name]
    alice = ec.generate_private_key(curve, provider=provider)
    bob = ec.generate_private_key(curve, provider=provider)
    z_alice = alice.exchange(ec.ECDH(), bob.public_key())
    z_bob = bob.exchange(ec.ECDH(), alice.public_key())
    assert z_alice == z_bob
    assert len(z_alice) == CURVES[name].size
    plain = alice.to_cryptography().exchange(_ec.ECDH(), bob.public_key().to_cryptography())
    assert z_alice == plain
    # A bare `cryptography` peer key is wrapped and validated the same way.
    assert alice.exchange(ec.ECDH(), bob.public_key().to_cryptography()) == plain
    assert_counted(provider, f"ecdh-{name}", 3)


# --------------------------------------------------------------------------- bad peer keys


class _UncheckedPublicKey(_ec.EllipticCurvePublicKey):
    """A peer key holding coordinates `cryptography` would refuse or reduce: it lets the checks
    above the engines be reached with exactly the bad point."""

    def __init__(self, curve: _ec.EllipticCurve, x: int, y: int) -> None:
        self._curve, self._x, self._y = curve, x, y

    @property
    def curve(self) -> _ec.EllipticCurve:
        return self._curve

    @property
    def key_size(self) -> int:
        return self._curve.key_size

    def public_numbers(self) -> _ec.EllipticCurvePublicNumbers:
        return _ec.EllipticCurvePublicNumbers(self._x, self._y, self._curve)

    def public_bytes(self, encoding: Any, format: Any) -> bytes:
        raise NotImplementedError

    def verify(self, signature: bytes, data: bytes, signature_algorithm: Any) -> None:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __copy__(self) -> _UncheckedPublicKey:
        return self

    def __deepcopy__(self, memo: dict) -> _UncheckedPublicKey:
        return self


BAD_POINTS = {
    "off-curve": lambda c: (c.gx, (c.gy + 1) % c.p),
    "origin": lambda c: (0, 0),
    "x-equals-p": lambda c: (c.p, c.gy),
    "x-plus-p": lambda c: (c.gx + c.p, c.gy),  # G, written out of range
    "y-plus-p": lambda c: (c.gx, c.gy + c.p),
    "negative-y": lambda c: (c.gx, -c.gy),
    "x-too-wide": lambda c: (c.gx + (1 << (8 * c.size)), c.gy),
}


@each_curve
def test_bad_peer_points_raise_value_error_and_no_engine_sees_the_op(name):
    provider, engine = takeall_provider()
    curve, table = CURVE_OBJECTS[name], CURVES[name]
    key = ec.generate_private_key(curve, provider=provider)
    alg = f"ecdh-{name}"
    for case, make in BAD_POINTS.items():
        x, y = make(table)
        with pytest.raises(ValueError):
            validate.ec_public_point(table, x, y)
        peer = ec.EllipticCurvePublicKey(_UncheckedPublicKey(curve, x, y), provider=provider)
        with pytest.raises(ValueError):
            peer.validate()
        with pytest.raises(ValueError):
            key.exchange(ec.ECDH(), peer)
        # The provider's own check, for an op built without the key classes.
        op = EcdhOp(alg, "exchange", key.to_cryptography(), peer.to_cryptography())
        with pytest.raises(ValueError):
            provider.run(op)
        # `cryptography` itself refuses the point, or reduces it mod p onto the curve.
        if x >= 0 and y >= 0:
            try:
                built = _ec.EllipticCurvePublicNumbers(x, y, curve).public_key()
            except ValueError:
                pass
            else:
                assert case in ("x-plus-p", "y-plus-p", "x-too-wide", "x-equals-p"), case
                held = built.public_numbers()
                assert (held.x, held.y) == (x % table.p, y % table.p)
        encoded = _encoded_point(table, x, y)
        if encoded is not None:
            with pytest.raises(ValueError):
                ec.EllipticCurvePublicKey.from_encoded_point(curve, encoded, provider=provider)
    assert engine.seen == []
    assert_untouched(provider, alg)


def test_peer_key_on_another_curve_raises_value_error_and_no_engine_sees_the_op():
    provider, engine = takeall_provider()
    key = ec.generate_private_key(_ec.SECP256R1(), provider=provider)
    for other in (_ec.SECP384R1(), _ec.SECP256K1(), _ec.BrainpoolP256R1()):
        peer = ec.generate_private_key(other, provider=provider).public_key()
        with pytest.raises(ValueError):
            key.exchange(ec.ECDH(), peer)
        op = EcdhOp("ecdh-p256", "exchange", key.to_cryptography(), peer.to_cryptography())
        with pytest.raises(ValueError):
            provider.run(op)
    assert engine.seen == []
    assert_untouched(provider, "ecdh-p256")
