"""Tests for the RFC 7919 ffdhe group table."""

import functools
import random

import pytest

from cryptoffload import dh
from cryptoffload.blocks.ffdhe import FFDHE_GROUPS, Group, group_for_prime

# (name, b, X) from RFC 7919 appendix A.
RFC7919 = [
    ("ffdhe2048", 2048, 560316),
    ("ffdhe3072", 3072, 2625351),
    ("ffdhe4096", 4096, 5736041),
    ("ffdhe6144", 6144, 15705020),
    ("ffdhe8192", 8192, 10965728),
]
NAMES = [name for name, _, _ in RFC7919]
each_group = pytest.mark.parametrize("name", NAMES, ids=NAMES)

# Miller-Rabin bases per group: (fixed bases, number of random bases). A modexp at 8192 bits
# costs over a second in pure Python, so rounds shrink as groups grow to keep the file fast;
# for p in the two biggest groups only the shared base-2 round runs (see test_p_is_probable_prime).
MR_PLAN: dict[str, tuple[tuple[int, ...], int]] = {
    "ffdhe2048": ((2, 3, 5, 7), 2),
    "ffdhe3072": ((2,), 2),
    "ffdhe4096": ((), 1),
    "ffdhe6144": ((), 1),
    "ffdhe8192": ((), 1),
}


@functools.cache
def _two_to_q(name: str) -> int:
    group = FFDHE_GROUPS[name]
    return pow(2, group.q, group.p)


def _floor_e_shifted(m: int) -> int:
    """floor(e * 2**m), from the series sum 1/k! in fixed point with a proven error bound."""
    guard = 64
    term = 1 << (m + guard)
    total, k = 0, 0
    while term:
        total += term
        k += 1
        term //= k
    # Each of the k truncated terms is low by < 1 and the dropped tail is < 2, so the true
    # value lies in [total, total + k + 2); both ends must floor to the same integer.
    low, high = total >> guard, (total + k + 2) >> guard
    assert low == high
    return low


def _rfc7919_prime(b: int, x: int) -> int:
    return 2**b - 2 ** (b - 64) + (_floor_e_shifted(b - 130) + x) * 2**64 - 1


def _small_primes(limit: int) -> list[int]:
    sieve = bytearray([1]) * limit
    sieve[:2] = b"\x00\x00"
    for i in range(2, int(limit**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(sieve[i * i :: i]))
    return [i for i, flag in enumerate(sieve) if flag]


SMALL_PRIMES = _small_primes(2000)


def _miller_rabin(n: int, bases: list[int]) -> bool:
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in bases:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _is_probable_prime(n: int, fixed: tuple[int, ...], n_random: int) -> tuple[bool, list[int]]:
    """Trial division, then Miller-Rabin; also returns the bases used so failures reproduce."""
    if n < 2:
        return False, []
    for sp in SMALL_PRIMES:
        if n % sp == 0:
            return n == sp, []
    bases = list(fixed) + [random.randrange(2, n - 1) for _ in range(n_random)]
    return _miller_rabin(n, bases), bases


def test_primality_helper_sanity() -> None:
    assert _is_probable_prime(2**127 - 1, (2, 3), 2)[0]
    assert _is_probable_prime(997, (2,), 0)[0]
    assert not _is_probable_prime(561, (2,), 0)[0]  # Carmichael number
    assert not _is_probable_prime((2**521 - 1) * (2**607 - 1), (), 1)[0]
    # 2047 = 23 * 89 is a strong pseudoprime to base 2 only: proves the bases matter.
    assert _miller_rabin(2047, [2])
    assert not _miller_rabin(2047, [3])
    assert _floor_e_shifted(0) == 2
    assert _floor_e_shifted(64) == 0x2B7E151628AED2A6A


def test_table_has_exactly_the_rfc_groups() -> None:
    assert list(FFDHE_GROUPS) == NAMES


@pytest.mark.parametrize(("name", "b", "x"), RFC7919, ids=NAMES)
def test_prime_matches_rfc_formula(name: str, b: int, x: int) -> None:
    group = FFDHE_GROUPS[name]
    assert group.p == _rfc7919_prime(b, x)
    assert group.bits == b == group.p.bit_length()


@each_group
def test_group_fields(name: str) -> None:
    group = FFDHE_GROUPS[name]
    assert isinstance(group, Group)
    assert group.name == name
    assert group.g == 2
    assert group.p == 2 * group.q + 1


@each_group
def test_outer_64_bits_are_ones(name: str) -> None:
    group = FFDHE_GROUPS[name]
    ones = 2**64 - 1
    assert group.p >> (group.bits - 64) == ones
    assert group.p & ones == ones


@each_group
def test_p_is_probable_prime(name: str) -> None:
    group = FFDHE_GROUPS[name]
    assert group.p % 3 != 0
    # p - 1 = 2q, so Miller-Rabin base 2 on p is exactly 2^q == +-1 (mod p); given q prime, the
    # same value also proves p prime (Pocklington: 2^(p-1) == 1 and gcd(2^2 - 1, p) == 1).
    assert _two_to_q(name) in (1, group.p - 1)
    if name in ("ffdhe6144", "ffdhe8192"):
        return
    fixed, n_random = MR_PLAN[name]
    ok, bases = _is_probable_prime(group.p, fixed, n_random)
    assert ok, f"composite witness among bases {bases}"


@each_group
def test_q_is_probable_prime(name: str) -> None:
    fixed, n_random = MR_PLAN[name]
    ok, bases = _is_probable_prime(FFDHE_GROUPS[name].q, fixed, n_random)
    assert ok, f"composite witness among bases {bases}"


@each_group
def test_generator_has_order_q(name: str) -> None:
    assert FFDHE_GROUPS[name].g == 2
    # With q prime, 2^q == 1 and 2 != 1 means the order of 2 is exactly q.
    assert _two_to_q(name) == 1


@each_group
def test_group_for_prime(name: str) -> None:
    group = FFDHE_GROUPS[name]
    assert group_for_prime(group.p) is group
    assert group_for_prime(group.p + 2) is None
    assert group_for_prime(group.q) is None


def test_group_for_prime_unknown() -> None:
    assert group_for_prime(2**127 - 1) is None
    assert group_for_prime(0) is None


def test_cryptography_accepts_ffdhe2048_and_exchange_agrees() -> None:
    group = FFDHE_GROUPS["ffdhe2048"]
    params = dh.DHParameterNumbers(group.p, 2).parameters()
    numbers = params.parameter_numbers()
    assert (numbers.p, numbers.g) == (group.p, 2)
    alice = params.generate_private_key()
    bob = params.generate_private_key()
    for key in (alice, bob):
        y = key.public_key().public_numbers().y
        assert 1 < y < group.p - 1
        assert pow(y, group.q, group.p) == 1
    shared = alice.exchange(bob.public_key())
    assert shared == bob.exchange(alice.public_key())
    assert len(shared) == 256
