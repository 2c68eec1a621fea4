"""Prime-field short-Weierstrass curve parameters and reference affine point arithmetic."""

from typing import NamedTuple

from cryptography.hazmat.primitives.asymmetric import ec

Point = tuple[int, int] | None
"""An affine point (x, y); None is the point at infinity."""


class Curve(NamedTuple):
    """The curve y^2 = x^3 + a*x + b over GF(p), base point (gx, gy) of order n, cofactor h."""

    name: str
    openssl_name: str
    p: int
    a: int
    b: int
    gx: int
    gy: int
    n: int
    h: int

    @property
    def size(self) -> int:
        """Byte length of p, i.e. of one fixed-width encoded coordinate."""
        return (self.p.bit_length() + 7) // 8

    @property
    def generator(self) -> tuple[int, int]:
        """The base point G as an affine (x, y) pair."""
        return (self.gx, self.gy)


def _x(*chunks: str) -> int:
    return int("".join(chunks), 16)


# Values as published in SEC 2 v2 and RFC 5639 (checked against OpenSSL's explicit encodings).
CURVES: dict[str, Curve] = {
    c.name: c
    for c in (
        Curve(
            name="p192",
            openssl_name="secp192r1",
            p=_x("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFFFFFFFFFFFF"),
            a=_x("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFFFFFFFFFFFC"),
            b=_x("64210519E59C80E70FA7E9AB72243049FEB8DEECC146B9B1"),
            gx=_x("188DA80EB03090F67CBF20EB43A18800F4FF0AFD82FF1012"),
            gy=_x("07192B95FFC8DA78631011ED6B24CDD573F977A11E794811"),
            n=_x("FFFFFFFFFFFFFFFFFFFFFFFF99DEF836146BC9B1B4D22831"),
            h=1,
        ),
        Curve(
            name="p224",
            openssl_name="secp224r1",
            p=_x("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF000000000000000000000001"),
            a=_x("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFE"),
            b=_x("B4050A850C04B3ABF54132565044B0B7D7BFD8BA270B39432355FFB4"),
            gx=_x("B70E0CBD6BB4BF7F321390B94A03C1D356C21122343280D6115C1D21"),
            gy=_x("BD376388B5F723FB4C22DFE6CD4375A05A07476444D5819985007E34"),
            n=_x("FFFFFFFFFFFFFFFFFFFFFFFFFFFF16A2E0B8F03E13DD29455C5C2A3D"),
            h=1,
        ),
        Curve(
            name="p256",
            openssl_name="secp256r1",
            p=_x("FFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF"),
            a=_x("FFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFC"),
            b=_x("5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B"),
            gx=_x("6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296"),
            gy=_x("4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5"),
            n=_x("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551"),
            h=1,
        ),
        Curve(
            name="p384",
            openssl_name="secp384r1",
            p=_x(
                "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFE",
                "FFFFFFFF0000000000000000FFFFFFFF",
            ),
            a=_x(
                "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFE",
                "FFFFFFFF0000000000000000FFFFFFFC",
            ),
            b=_x(
                "B3312FA7E23EE7E4988E056BE3F82D19181D9C6EFE8141120314088F5013875A",
                "C656398D8A2ED19D2A85C8EDD3EC2AEF",
            ),
            gx=_x(
                "AA87CA22BE8B05378EB1C71EF320AD746E1D3B628BA79B9859F741E082542A38",
                "5502F25DBF55296C3A545E3872760AB7",
            ),
            gy=_x(
                "3617DE4A96262C6F5D9E98BF9292DC29F8F41DBD289A147CE9DA3113B5F0B8C0",
                "0A60B1CE1D7E819D7A431D7C90EA0E5F",
            ),
            n=_x(
                "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFC7634D81F4372DDF",
                "581A0DB248B0A77AECEC196ACCC52973",
            ),
            h=1,
        ),
        Curve(
            name="p521",
            openssl_name="secp521r1",
            p=_x(
                "01FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
                "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
                "FFFF",
            ),
            a=_x(
                "01FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
                "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
                "FFFC",
            ),
            b=_x(
                "0051953EB9618E1C9A1F929A21A0B68540EEA2DA725B99B315F3B8B489918EF1",
                "09E156193951EC7E937B1652C0BD3BB1BF073573DF883D2C34F1EF451FD46B50",
                "3F00",
            ),
            gx=_x(
                "00C6858E06B70404E9CD9E3ECB662395B4429C648139053FB521F828AF606B4D",
                "3DBAA14B5E77EFE75928FE1DC127A2FFA8DE3348B3C1856A429BF97E7E31C2E5",
                "BD66",
            ),
            gy=_x(
                "011839296A789A3BC0045C8A5FB42C7D1BD998F54449579B446817AFBD17273E",
                "662C97EE72995EF42640C550B9013FAD0761353C7086A272C24088BE94769FD1",
                "6650",
            ),
            n=_x(
                "01FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
                "FFFA51868783BF2F966B7FCC0148F709A5D03BB5C9B8899C47AEBB6FB71E9138",
                "6409",
            ),
            h=1,
        ),
        Curve(
            name="secp256k1",
            openssl_name="secp256k1",
            p=_x("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F"),
            a=_x("0000000000000000000000000000000000000000000000000000000000000000"),
            b=_x("0000000000000000000000000000000000000000000000000000000000000007"),
            gx=_x("79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798"),
            gy=_x("483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8"),
            n=_x("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141"),
            h=1,
        ),
        Curve(
            name="brainpoolp224r1",
            openssl_name="brainpoolP224r1",
            p=_x("D7C134AA264366862A18302575D1D787B09F075797DA89F57EC8C0FF"),
            a=_x("68A5E62CA9CE6C1C299803A6C1530B514E182AD8B0042A59CAD29F43"),
            b=_x("2580F63CCFE44138870713B1A92369E33E2135D266DBB372386C400B"),
            gx=_x("0D9029AD2C7E5CF4340823B2A87DC68C9E4CE3174C1E6EFDEE12C07D"),
            gy=_x("58AA56F772C0726F24C6B89E4ECDAC24354B9E99CAA3F6D3761402CD"),
            n=_x("D7C134AA264366862A18302575D0FB98D116BC4B6DDEBCA3A5A7939F"),
            h=1,
        ),
        Curve(
            name="brainpoolp256r1",
            openssl_name="brainpoolP256r1",
            p=_x("A9FB57DBA1EEA9BC3E660A909D838D726E3BF623D52620282013481D1F6E5377"),
            a=_x("7D5A0975FC2C3057EEF67530417AFFE7FB8055C126DC5C6CE94A4B44F330B5D9"),
            b=_x("26DC5C6CE94A4B44F330B5D9BBD77CBF958416295CF7E1CE6BCCDC18FF8C07B6"),
            gx=_x("8BD2AEB9CB7E57CB2C4B482FFC81B7AFB9DE27E1E3BD23C23A4453BD9ACE3262"),
            gy=_x("547EF835C3DAC4FD97F8461A14611DC9C27745132DED8E545C1D54C72F046997"),
            n=_x("A9FB57DBA1EEA9BC3E660A909D838D718C397AA3B561A6F7901E0E82974856A7"),
            h=1,
        ),
        Curve(
            name="brainpoolp320r1",
            openssl_name="brainpoolP320r1",
            p=_x(
                "D35E472036BC4FB7E13C785ED201E065F98FCFA6F6F40DEF4F92B9EC7893EC28FCD412B1F1B32E27"
            ),
            a=_x(
                "3EE30B568FBAB0F883CCEBD46D3F3BB8A2A73513F5EB79DA66190EB085FFA9F492F375A97D860EB4"
            ),
            b=_x(
                "520883949DFDBC42D3AD198640688A6FE13F41349554B49ACC31DCCD884539816F5EB4AC8FB1F1A6"
            ),
            gx=_x(
                "43BD7E9AFB53D8B85289BCC48EE5BFE6F20137D10A087EB6E7871E2A10A599C710AF8D0D39E20611"
            ),
            gy=_x(
                "14FDD05545EC1CC8AB4093247F77275E0743FFED117182EAA9C77877AAAC6AC7D35245D1692E8EE1"
            ),
            n=_x(
                "D35E472036BC4FB7E13C785ED201E065F98FCFA5B68F12A32D482EC7EE8658E98691555B44C59311"
            ),
            h=1,
        ),
        Curve(
            name="brainpoolp384r1",
            openssl_name="brainpoolP384r1",
            p=_x(
                "8CB91E82A3386D280F5D6F7E50E641DF152F7109ED5456B412B1DA197FB71123",
                "ACD3A729901D1A71874700133107EC53",
            ),
            a=_x(
                "7BC382C63D8C150C3C72080ACE05AFA0C2BEA28E4FB22787139165EFBA91F90F",
                "8AA5814A503AD4EB04A8C7DD22CE2826",
            ),
            b=_x(
                "04A8C7DD22CE28268B39B55416F0447C2FB77DE107DCD2A62E880EA53EEB62D5",
                "7CB4390295DBC9943AB78696FA504C11",
            ),
            gx=_x(
                "1D1C64F068CF45FFA2A63A81B7C13F6B8847A3E77EF14FE3DB7FCAFE0CBD10E8",
                "E826E03436D646AAEF87B2E247D4AF1E",
            ),
            gy=_x(
                "8ABE1D7520F9C2A45CB1EB8E95CFD55262B70B29FEEC5864E19C054FF9912928",
                "0E4646217791811142820341263C5315",
            ),
            n=_x(
                "8CB91E82A3386D280F5D6F7E50E641DF152F7109ED5456B31F166E6CAC0425A7",
                "CF3AB6AF6B7FC3103B883202E9046565",
            ),
            h=1,
        ),
        Curve(
            name="brainpoolp512r1",
            openssl_name="brainpoolP512r1",
            p=_x(
                "AADD9DB8DBE9C48B3FD4E6AE33C9FC07CB308DB3B3C9D20ED6639CCA70330871",
                "7D4D9B009BC66842AECDA12AE6A380E62881FF2F2D82C68528AA6056583A48F3",
            ),
            a=_x(
                "7830A3318B603B89E2327145AC234CC594CBDD8D3DF91610A83441CAEA9863BC",
                "2DED5D5AA8253AA10A2EF1C98B9AC8B57F1117A72BF2C7B9E7C1AC4D77FC94CA",
            ),
            b=_x(
                "3DF91610A83441CAEA9863BC2DED5D5AA8253AA10A2EF1C98B9AC8B57F1117A7",
                "2BF2C7B9E7C1AC4D77FC94CADC083E67984050B75EBAE5DD2809BD638016F723",
            ),
            gx=_x(
                "81AEE4BDD82ED9645A21322E9C4C6A9385ED9F70B5D916C1B43B62EEF4D0098E",
                "FF3B1F78E2D0D48D50D1687B93B97D5F7C6D5047406A5E688B352209BCB9F822",
            ),
            gy=_x(
                "7DDE385D566332ECC0EABFA9CF7822FDF209F70024A57B1AA000C55B881F8111",
                "B2DCDE494A5F485E5BCA4BD88A2763AED1CA2B2FA8F0540678CD1E0F3AD80892",
            ),
            n=_x(
                "AADD9DB8DBE9C48B3FD4E6AE33C9FC07CB308DB3B3C9D20ED6639CCA70330870",
                "553E5C414CA92619418661197FAC10471DB1D381085DDADDB58796829CA90069",
            ),
            h=1,
        ),
    )
}

_BY_OPENSSL_NAME: dict[str, Curve] = {c.openssl_name: c for c in CURVES.values()}

#: The installed `cryptography`'s curve classes by OpenSSL name (a release may add curves:
#: brainpoolP224r1 and brainpoolP320r1 came in 51).
CRYPTOGRAPHY_CLASSES: dict[str, type[ec.EllipticCurve]] = {
    value.name: value
    for value in vars(ec).values()
    if isinstance(value, type)
    and issubclass(value, ec.EllipticCurve)
    and value is not ec.EllipticCurve
}

#: The curves of the table that the installed `cryptography` makes keys on: the ones that have
#: algorithm names (``ecdsa-<name>-sign``...).
IN_CRYPTOGRAPHY: dict[str, Curve] = {
    name: c for name, c in CURVES.items() if c.openssl_name in CRYPTOGRAPHY_CLASSES
}


def by_cryptography(curve: ec.EllipticCurve) -> Curve:
    """Return the parameters for a `cryptography` curve instance, matched on its ``.name``."""
    name = getattr(curve, "name", None)
    found = _BY_OPENSSL_NAME.get(name) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"unsupported curve {name if isinstance(name, str) else curve!r}")
    return found


def short_name(curve: ec.EllipticCurve) -> str:
    """Return our short spelling (e.g. "p256") for a `cryptography` curve instance."""
    return by_cryptography(curve).name


def is_on_curve(c: Curve, x: int, y: int) -> bool:
    """True if 0 <= x, y < p and (x, y) satisfies the curve equation."""
    if not (0 <= x < c.p and 0 <= y < c.p):
        return False
    return (y * y - (x * x * x + c.a * x + c.b)) % c.p == 0


def point_neg(c: Curve, point: Point) -> Point:
    """Return -point."""
    if point is None:
        return None
    x, y = point
    return (x, -y % c.p)


def point_add(c: Curve, p1: Point, p2: Point) -> Point:
    """Return p1 + p2 for points on the curve (affine coordinates, not constant-time)."""
    if p1 is None:
        return p2
    if p2 is None:
        return p1
    p = c.p
    x1, y1 = p1
    x2, y2 = p2
    if (x1 - x2) % p == 0:
        # Same x: either P + (-P), which also covers doubling a point with y == 0, or P + P.
        if (y1 + y2) % p == 0:
            return None
        slope = (3 * x1 * x1 + c.a) * pow(2 * y1, -1, p) % p
    else:
        slope = (y2 - y1) * pow(x2 - x1, -1, p) % p
    x3 = (slope * slope - x1 - x2) % p
    y3 = (slope * (x1 - x3) - y1) % p
    return (x3, y3)


def point_mul(c: Curve, k: int, point: Point) -> Point:
    """Return k * point by double-and-add (not constant-time).

    k is deliberately not reduced mod n, so ``point_mul(c, c.n, q) is None`` is a valid
    subgroup-membership check even for a point outside the order-n subgroup.
    """
    if k < 0:
        k, point = -k, point_neg(c, point)
    result: Point = None
    for i in reversed(range(k.bit_length())):
        result = point_add(c, result, result)
        if (k >> i) & 1:
            result = point_add(c, result, point)
    return result
