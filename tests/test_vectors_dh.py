"""Finite-field DH: the CAVP FFC KAS validity vectors against our peer-key validation (those
groups are not FFDHE, so Z is checked by direct exponentiation), then the RFC 7919 groups
through every engine set: agreement, bad peer values refused before any engine, and the
public value's byte encoding.
"""

from __future__ import annotations

import functools
import hashlib
import random

import gmpy2
import pytest
from counting import assert_counted, assert_untouched, takeall_provider
from vectors.loaders import ffc_kas_vectors

from cryptoffload import dh
from cryptoffload.blocks.ffdhe import FFDHE_GROUPS
from cryptoffload.core import validate
from cryptoffload.core.ops import DhOp

SMALL_GROUPS = ["ffdhe2048", "ffdhe3072"]
LARGE_GROUPS = ["ffdhe4096", "ffdhe6144", "ffdhe8192"]
each_small_group = pytest.mark.parametrize("name", SMALL_GROUPS)


def _reason_code(record: dict) -> int:
    return int(record["reason"].split("-", 1)[0].strip())


def _padded(value: int, p: int) -> bytes:
    return value.to_bytes((p.bit_length() + 7) // 8, "big")


def _is_quadratic_residue(a: int, p: int) -> bool:
    """Euler's criterion, by exponentiation (independent of validate's Legendre symbol)."""
    return gmpy2.powmod(a, (p - 1) // 2, p) == 1


def _smallest_non_residue(p: int) -> int:
    return next(a for a in range(2, 1000) if not _is_quadratic_residue(a, p))


# --------------------------------------------------------------------------- CAVP FFC KAS

FFC_PARAM_SETS = sorted({r["param_set"] for r in ffc_kas_vectors()})


@pytest.mark.parametrize("param_set", FFC_PARAM_SETS)
def test_ffc_kas_vectors_agree_or_fail_for_the_recorded_reason(param_set):
    """Reason codes: 0 and 10 pass (10: Z keeps its leading zero nibble); 1 is the peer's (CAVS's)
    static public key failing PKV and 3 the IUT's own, both refused by ffc_public_value; 4 is a
    changed IUT private key (key pair inconsistent); 5 is a changed Z."""
    records = [r for r in ffc_kas_vectors() if r["param_set"] == param_set]
    assert {_reason_code(r) for r in records} == {0, 1, 3, 4, 5, 10}
    for r in records:
        p, q, g = r["p"], r["q"], r["g"]
        assert p != 2 * q + 1  # DSA-style groups: the subgroup check is y^q = 1, not Legendre
        assert len(r["z"]) == (p.bit_length() + 7) // 8
        assert hashlib.new(r["hash"], r["z"]).digest() == r["hash_z"]
        code = _reason_code(r)
        x, y_iut, y_peer = r["iut_private"], r["iut_public"], r["peer_public"]
        if code == 1:
            with pytest.raises(ValueError):
                validate.ffc_public_value(p, q, y_peer)
            continue
        validate.ffc_public_value(p, q, y_peer)
        if code == 3:
            with pytest.raises(ValueError):
                validate.ffc_public_value(p, q, y_iut)
            continue
        validate.ffc_public_value(p, q, y_iut)
        consistent = pow(g, x, p) == y_iut
        z = _padded(pow(y_peer, x, p), p)
        if r["result"]:
            assert consistent and z == r["z"], (r["count"], r["role"])
            assert pow(g, r["peer_private"], p) == y_peer
            assert z == _padded(pow(y_iut, r["peer_private"], p), p)
            if code == 10:
                assert z[0] < 0x10
        elif code == 4:
            assert not consistent and z != r["z"]
        elif code == 5:
            assert consistent and z != r["z"]
        else:
            pytest.fail(f"unexpected KAS failure reason {r['reason']!r}")


@each_small_group
def test_ffdhe_subgroup_check_matches_full_exponentiation(name):
    group = FFDHE_GROUPS[name]
    p, q = group.p, group.q
    rng = random.Random(7919)
    values = [2, 3, 4, 5, 7, p - 2, p - 3, q, q + 1] + [rng.randrange(2, p - 1) for _ in range(24)]
    for y in values:
        in_subgroup = gmpy2.powmod(y, q, p) == 1
        if in_subgroup:
            validate.dh_public_value(group, y)
        else:
            with pytest.raises(ValueError):
                validate.dh_public_value(group, y)
    answers = {gmpy2.powmod(y, q, p) == 1 for y in values}
    assert answers == {True, False}


# --------------------------------------------------------------------------- FFDHE agreement


@each_small_group
def test_ffdhe_agreement_both_ways_matches_exponentiation(provider, name):
    group = FFDHE_GROUPS[name]
    alice = dh.generate_private_key(name, provider=provider)
    bob = dh.generate_private_key(name, provider=provider)
    assert alice.group == bob.group == name
    z_alice = alice.exchange(bob.public_key())
    z_bob = bob.exchange(alice.public_key())
    assert z_alice == z_bob
    x = alice.private_numbers().x
    assert z_alice == _padded(pow(bob.public_key().public_numbers().y, x, group.p), group.p)
    assert len(z_alice) == group.bits // 8
    # A bare `cryptography` peer key is wrapped and validated the same way.
    assert alice.exchange(bob.public_key().to_cryptography()) == z_alice
    assert_counted(provider, name, 3)


@pytest.mark.parametrize("name", LARGE_GROUPS)
def test_ffdhe_large_group_agreement_once_through_a_take_all_engine(name):
    provider, engine = takeall_provider()
    alice = dh.generate_private_key(name, provider=provider)
    bob = dh.generate_private_key(name, provider=provider)
    z = alice.exchange(bob.public_key())
    assert z == bob.exchange(alice.public_key())
    assert len(z) == FFDHE_GROUPS[name].bits // 8
    assert [op.alg for op in engine.seen] == [name, name]
    assert_counted(provider, name, 2)


def test_shared_secret_keeps_its_leading_zero_bytes(provider):
    group = FFDHE_GROUPS["ffdhe2048"]
    p = group.p
    peer = dh.generate_private_key("ffdhe2048", provider=provider).public_key()
    y_peer = peer.public_numbers().y
    # Find a private value whose secret has a zero first byte (about one in 256).
    x = next(
        x
        for x in range(1 << 200, (1 << 200) + 100_000)
        if gmpy2.powmod(y_peer, x, p) >> (2048 - 8) == 0
    )
    params = dh.DHParameterNumbers(p, group.g)
    numbers = dh.DHPrivateNumbers(x, dh.DHPublicNumbers(pow(group.g, x, p), params))
    key = dh.DHPrivateKey(numbers.private_key(), provider=provider)
    z = key.exchange(peer)
    assert len(z) == 256 and z[0] == 0
    assert z == _padded(pow(y_peer, x, p), p)
    assert_counted(provider, "ffdhe2048", 1)


# --------------------------------------------------------------------------- peer values


@each_small_group
def test_peer_value_two_is_the_generator_in_the_subgroup_and_is_accepted(provider, name):
    group = FFDHE_GROUPS[name]
    # p = 7 (mod 8), so 2 is a quadratic residue: the order-q subgroup's own generator g.
    assert group.g == 2 and group.p % 8 == 7 and _is_quadratic_residue(2, group.p)
    key = dh.generate_private_key(name, provider=provider)
    peer = dh.DHPublicKey.from_public_value(name, 2, provider=provider)
    peer.validate()
    # 2^x is our own public value.
    assert key.exchange(peer) == key.public_key().public_value()
    assert_counted(provider, name, 1)


BAD_PEER_VALUES = {
    "zero": lambda g: 0,
    "one": lambda g: 1,
    "p-1": lambda g: g.p - 1,
    "p": lambda g: g.p,
    "p+1": lambda g: g.p + 1,
    "p-2": lambda g: g.p - 2,  # in range, but -2 is a non-residue as p = 7 (mod 8)
    "smallest-non-residue": lambda g: _smallest_non_residue(g.p),
}


@each_small_group
@pytest.mark.parametrize("case", list(BAD_PEER_VALUES))
def test_bad_peer_values_raise_value_error_before_any_engine(provider, name, case):
    group = FFDHE_GROUPS[name]
    y = BAD_PEER_VALUES[case](group)
    if 2 <= y <= group.p - 2:
        assert not _is_quadratic_residue(y, group.p)
    key = dh.generate_private_key(name, provider=provider)
    as_int = dh.DHPublicKey.from_public_value(name, y, provider=provider)
    as_bytes = dh.DHPublicKey.from_public_value(
        name, y.to_bytes((y.bit_length() + 7) // 8 or 1, "big"), provider=provider
    )
    for peer in (as_int, as_bytes):
        assert peer.public_numbers().y == y
        with pytest.raises(ValueError):
            key.exchange(peer)
    with pytest.raises(ValueError):
        validate.dh_public_value(group, y)
    # The provider's own check, for an op built without the key classes.
    op = DhOp(name, "exchange", key.to_cryptography(), as_int.to_cryptography())
    with pytest.raises(ValueError):
        provider.run(op)
    assert_untouched(provider, name)


def test_smallest_non_residues_of_the_groups():
    # Found by Euler's criterion; p = 7 (mod 8) makes 2 a residue, so they are odd primes.
    assert _smallest_non_residue(FFDHE_GROUPS["ffdhe2048"].p) == 7
    assert _smallest_non_residue(FFDHE_GROUPS["ffdhe3072"].p) == 5


@functools.cache
def _outside_key() -> object:
    """A valid public key in a CAVP (non-RFC 7919) group; OpenSSL checks the group once."""
    r = next(r for r in ffc_kas_vectors() if r["param_set"] == "FB" and r["result"])
    params = dh.DHParameterNumbers(r["p"], r["g"], r["q"])
    return dh.DHPublicNumbers(r["peer_public"], params).public_key()


def test_peer_from_another_group_raises_value_error_before_any_engine(provider):
    key = dh.generate_private_key("ffdhe2048", provider=provider)
    other = dh.generate_private_key("ffdhe3072", provider=provider).public_key()
    with pytest.raises(ValueError):
        key.exchange(other)
    # Same prime, another generator: still not this group.
    group = FFDHE_GROUPS["ffdhe2048"]
    y = other.public_numbers().y % group.p
    foreign = dh.DHPublicNumbers(y, dh.DHParameterNumbers(group.p, 5)).public_key()
    with pytest.raises(ValueError):
        key.exchange(dh.DHPublicKey(foreign, provider=provider))
    for peer in (other.to_cryptography(), foreign.to_cryptography()):
        op = DhOp("ffdhe2048", "exchange", key.to_cryptography(), peer)
        with pytest.raises(ValueError):
            provider.run(op)
    # A key of a group outside RFC 7919 is a key of another group (and its own algorithm).
    outside = _outside_key()
    assert dh.DHPublicKey(outside, provider=provider).group == "dh-2048"
    with pytest.raises(ValueError):
        key.exchange(outside)
    assert_untouched(provider, "ffdhe2048")
    assert_untouched(provider, "ffdhe3072")


# --------------------------------------------------------------------------- encoding


@each_small_group
def test_from_public_value_round_trips_through_public_value(provider, name):
    group = FFDHE_GROUPS[name]
    key = dh.generate_private_key(name, provider=provider)
    pub = key.public_key()
    wire = pub.public_value()
    assert len(wire) == group.bits // 8
    assert int.from_bytes(wire, "big") == pub.public_numbers().y
    for encoded in (wire, bytearray(wire), memoryview(wire), pub.public_numbers().y):
        back = dh.DHPublicKey.from_public_value(name, encoded, provider=provider)
        assert back == pub
        assert back.group == name and back.key_size == group.bits
        assert back.public_value() == wire
    # A small value keeps its leading zero bytes on the wire.
    small = dh.DHPublicKey.from_public_value(name, 2, provider=provider)
    assert small.public_value() == b"\x00" * (group.bits // 8 - 1) + b"\x02"
    assert dh.DHPublicKey.from_public_value(name, small.public_value()).public_numbers().y == 2
    # The round-tripped key works as a peer.
    peer = dh.generate_private_key(name, provider=provider)
    back = dh.DHPublicKey.from_public_value(name, wire, provider=provider)
    assert peer.exchange(back) == key.exchange(peer.public_key())
    assert_counted(provider, name, 2)
    with pytest.raises(ValueError):
        dh.DHPublicKey.from_public_value("ffdhe1024", wire)
    with pytest.raises(TypeError):
        dh.DHPublicKey.from_public_value(name, "00ff")
