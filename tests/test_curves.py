"""Tests for the prime-curve parameter table and the reference affine arithmetic."""

import random

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from cryptoffload.blocks.curves import (
    CURVES,
    IN_CRYPTOGRAPHY,
    Curve,
    Point,
    by_cryptography,
    is_on_curve,
    point_add,
    point_mul,
    point_neg,
    short_name,
)
from cryptoffload.core.names import all_algorithms

#: Our name -> `cryptography`'s class, for the curves the installed release has (brainpoolP224r1
#: and brainpoolP320r1 came in 51; the table carries them whatever the release).
CRYPTOGRAPHY_CURVES: dict[str, type[ec.EllipticCurve]] = {
    name: getattr(ec, cls)
    for name, cls in {
        "p192": "SECP192R1",
        "p224": "SECP224R1",
        "p256": "SECP256R1",
        "p384": "SECP384R1",
        "p521": "SECP521R1",
        "secp256k1": "SECP256K1",
        "brainpoolp224r1": "BrainpoolP224R1",
        "brainpoolp256r1": "BrainpoolP256R1",
        "brainpoolp320r1": "BrainpoolP320R1",
        "brainpoolp384r1": "BrainpoolP384R1",
        "brainpoolp512r1": "BrainpoolP512R1",
    }.items()
    if hasattr(ec, cls)
}

NAMES = list(CURVES)
each_curve = pytest.mark.parametrize("name", NAMES, ids=NAMES)
#: The curves checked against `cryptography` (all of the table's that the installed release has).
each_known_curve = pytest.mark.parametrize("name", list(CRYPTOGRAPHY_CURVES))


def _scalar(c: Curve, label: str) -> int:
    if label == "random200":
        # Seeded per curve so a failure is reproducible; reduced into [1, n-1] for p192.
        rng = random.Random(f"cryptoffload-{c.name}")
        return rng.getrandbits(200) % (c.n - 1) + 1
    if label == "n-1":
        return c.n - 1
    return int(label)


def test_table_covers_every_prime_curve_in_cryptography() -> None:
    shipped = {
        v().name
        for v in vars(ec).values()
        if isinstance(v, type) and issubclass(v, ec.EllipticCurve) and v is not ec.EllipticCurve
    }
    # Older cryptography releases also carry binary (sect*) curves, which are out of scope.
    prime_curves = {name for name in shipped if not name.startswith("sect")}
    assert prime_curves <= {c.openssl_name for c in CURVES.values()}
    assert {c.openssl_name for c in IN_CRYPTOGRAPHY.values()} == prime_curves
    assert set(IN_CRYPTOGRAPHY) == set(CRYPTOGRAPHY_CURVES)


def test_only_curves_cryptography_has_get_algorithm_names() -> None:
    names = set(all_algorithms())
    for curve in CURVES:
        expected = curve in IN_CRYPTOGRAPHY
        assert (f"ecdsa-{curve}-sign" in names) is expected, curve
        assert (f"ecdh-{curve}" in names) is expected, curve


def test_the_rfc_5639_curves_of_cryptography_51_are_in_the_table() -> None:
    assert CURVES["brainpoolp224r1"].size == 28
    assert CURVES["brainpoolp320r1"].size == 40
    assert CURVES["brainpoolp320r1"].n.bit_length() == 320


@each_known_curve
def test_names_and_sizes(name: str) -> None:
    c = CURVES[name]
    crypto_curve = CRYPTOGRAPHY_CURVES[name]()
    assert c.name == name
    assert c.openssl_name == crypto_curve.name
    assert c.p.bit_length() == crypto_curve.key_size
    assert c.size == (crypto_curve.key_size + 7) // 8
    if hasattr(crypto_curve, "group_order"):
        assert c.n == crypto_curve.group_order


def test_size_examples() -> None:
    assert CURVES["p192"].size == 24
    assert CURVES["p256"].size == 32
    assert CURVES["p521"].size == 66
    assert CURVES["brainpoolp512r1"].size == 64


@each_curve
def test_parameters_are_consistent(name: str) -> None:
    c = CURVES[name]
    assert c.h == 1
    assert (4 * c.a**3 + 27 * c.b**2) % c.p != 0
    assert 0 <= c.a < c.p and 0 < c.b < c.p
    # Hasse bound: |#E - (p + 1)| <= 2 sqrt(p), with #E = h * n.
    assert (c.h * c.n - (c.p + 1)) ** 2 <= 4 * c.p


@each_curve
def test_generator_on_curve(name: str) -> None:
    c = CURVES[name]
    assert c.generator == (c.gx, c.gy)
    assert is_on_curve(c, c.gx, c.gy)


@each_curve
def test_order_times_generator_is_infinity(name: str) -> None:
    c = CURVES[name]
    assert point_mul(c, c.n, c.generator) is None
    assert point_mul(c, c.n + 1, c.generator) == c.generator


@each_curve
def test_n_minus_one_times_generator_is_negated_generator(name: str) -> None:
    c = CURVES[name]
    minus_g = (c.gx, c.p - c.gy)
    assert point_neg(c, c.generator) == minus_g
    assert point_mul(c, c.n - 1, c.generator) == minus_g
    assert point_mul(c, -1, c.generator) == minus_g


@each_known_curve
@pytest.mark.parametrize("label", ["1", "2", "3", "random200", "n-1"])
def test_point_mul_matches_cryptography(name: str, label: str) -> None:
    c = CURVES[name]
    k = _scalar(c, label)
    public = ec.derive_private_key(k, CRYPTOGRAPHY_CURVES[name]()).public_key().public_numbers()
    assert point_mul(c, k, c.generator) == (public.x, public.y)
    assert is_on_curve(c, public.x, public.y)


@each_curve
def test_group_law(name: str) -> None:
    c = CURVES[name]
    g = c.generator
    rng = random.Random(f"group-law-{name}")
    a, b = rng.randrange(1, c.n), rng.randrange(1, c.n)
    pa, pb = point_mul(c, a, g), point_mul(c, b, g)
    assert point_add(c, pa, pb) == point_mul(c, (a + b) % c.n, g)
    assert point_add(c, pa, pb) == point_add(c, pb, pa)
    assert point_add(c, g, g) == point_mul(c, 2, g)
    assert point_add(c, None, g) == g
    assert point_add(c, g, None) == g
    assert point_add(c, g, point_neg(c, g)) is None
    assert point_mul(c, 0, g) is None
    assert point_mul(c, 5, None) is None
    assert point_mul(c, -a, g) == point_neg(c, pa)


@each_known_curve
def test_by_cryptography_round_trip(name: str) -> None:
    crypto_curve = CRYPTOGRAPHY_CURVES[name]()
    assert by_cryptography(crypto_curve) is CURVES[name]
    assert short_name(crypto_curve) == name


@each_curve
def test_off_curve_points_rejected(name: str) -> None:
    c = CURVES[name]
    assert not is_on_curve(c, c.gx, (c.gy + 1) % c.p)
    assert not is_on_curve(c, (c.gx + 1) % c.p, c.gy)
    # Equal mod p but not reduced: the range check must reject these.
    assert not is_on_curve(c, c.gx, c.gy + c.p)
    assert not is_on_curve(c, c.gx + c.p, c.gy)
    assert not is_on_curve(c, c.gx, c.gy - c.p)


class _FakeCurve(ec.EllipticCurve):
    @property
    def name(self) -> str:
        return "sect163k1"

    @property
    def key_size(self) -> int:
        return 163

    @property
    def group_order(self) -> int:
        return 0  # never consulted


def test_unsupported_curve_rejected() -> None:
    with pytest.raises(ValueError, match=r"unsupported curve.*sect163k1"):
        by_cryptography(_FakeCurve())
    with pytest.raises(ValueError, match="unsupported curve"):
        short_name(_FakeCurve())
    with pytest.raises(ValueError, match="unsupported curve"):
        by_cryptography(object())  # type: ignore[arg-type]


# y^2 = x^3 + 2x over GF(97): small enough to enumerate, and it has a 2-torsion point (0, 0),
# so it exercises the doubling-at-y=0 branch and a group order with a cofactor.
def _toy_curve() -> tuple[Curve, list[Point]]:
    p, a, b = 97, 2, 0
    points: list[Point] = [
        (x, y) for x in range(p) for y in range(p) if (y * y - x**3 - a * x - b) % p == 0
    ]
    points.append(None)
    order = len(points)
    toy = Curve(name="toy", openssl_name="toy", p=p, a=a, b=b, gx=0, gy=0, n=order, h=1)
    return toy, points


def test_toy_curve_group_law_is_exhaustively_consistent() -> None:
    toy, points = _toy_curve()
    order = len(points)
    assert order % 2 == 0
    assert point_add(toy, (0, 0), (0, 0)) is None
    finite = [pt for pt in points if pt is not None]
    assert all(is_on_curve(toy, *pt) for pt in finite)
    for pt in points:
        # Lagrange: every point's order divides the group order.
        assert point_mul(toy, order, pt) is None
        assert point_add(toy, pt, point_neg(toy, pt)) is None
    rng = random.Random("toy")
    for _ in range(300):
        p1, p2, p3 = rng.choice(points), rng.choice(points), rng.choice(points)
        s = point_add(toy, p1, p2)
        assert s is None or is_on_curve(toy, *s)
        assert point_add(toy, s, p3) == point_add(toy, p1, point_add(toy, p2, p3))


def test_toy_curve_subgroup_check_not_fooled_by_reduction() -> None:
    toy, points = _toy_curve()
    order = len(points)
    # A point of order 2 is outside any odd-order subgroup: multiplying by the odd part of
    # the group order must not give infinity, which is what a cofactor check relies on.
    odd_part = order
    while odd_part % 2 == 0:
        odd_part //= 2
    assert point_mul(toy, odd_part, (0, 0)) == (0, 0)


@pytest.mark.parametrize("name", ["p192", "p256", "p384", "p521"])
def test_peer_coordinates_equal_to_p_are_out_of_range_even_when_they_reduce_onto_the_curve(name):
    """(0, y0) lies on these curves (b is a square mod p); (p, y0) is the same point mod p but
    not a field element, and SP 800-56A refuses it before any arithmetic."""
    from cryptoffload.core import validate

    curve = CURVES[name]
    y0 = pow(curve.b, (curve.p + 1) // 4, curve.p)  # p = 3 mod 4: the square root of b
    assert is_on_curve(curve, 0, y0)
    validate.ec_public_point(curve, 0, y0)
    for x, y in ((curve.p, y0), (0, y0 + curve.p), (curve.p, curve.p - y0)):
        with pytest.raises(ValueError, match="out of range"):
            validate.ec_public_point(curve, x, y)
