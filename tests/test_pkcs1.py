"""blocks.pkcs1: paddings around a raw modexp, against cryptography and published vectors."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
from vectors.pkcs1_vectors import (
    OAEP_VECTORS,
    PKCS1V15_CRYPT_VECTORS,
    PKCS1V15_SIGN_VECTORS,
    PSS_VECTORS,
    Example,
    RSAKey,
    load,
)

from cryptoffload.blocks.pkcs1 import (
    DIGEST_INFO_PREFIXES,
    decrypt_with_raw,
    eme_oaep_decode,
    eme_oaep_encode,
    eme_pkcs1v15_decode,
    eme_pkcs1v15_encode,
    emsa_pkcs1v15_encode,
    emsa_pss_encode,
    emsa_pss_verify,
    encrypt_with_raw,
    i2osp,
    mgf1,
    oaep_params,
    os2ip,
    pss_params,
    rsa_private_raw,
    rsa_public_raw,
    salt_length_for,
    sign_with_raw,
    verify_with_raw,
)

DECRYPTION_FAILED = "^Decryption failed$"
RANGE_ERROR = r"^input must be in range 0 < m < n$"

SIGNATURE_HASHES = [
    hashes.SHA1(),
    hashes.SHA224(),
    hashes.SHA256(),
    hashes.SHA384(),
    hashes.SHA512(),
    hashes.SHA512_224(),
    hashes.SHA512_256(),
]
SALT_SPECS = [padding.PSS.MAX_LENGTH, padding.PSS.DIGEST_LENGTH, 0, 17]
SALT_IDS = ["max", "digest", "0", "17"]
# SHA-512 with a digest-length salt does not fit a 1024-bit key (see the test for that).
PSS_HASHES = [hashes.SHA1(), hashes.SHA256(), hashes.SHA384()]

OAEP_EXAMPLES = load(OAEP_VECTORS)
PSS_EXAMPLES = load(PSS_VECTORS)
SIGN_EXAMPLES = load(PKCS1V15_SIGN_VECTORS)
CRYPT_EXAMPLES = load(PKCS1V15_CRYPT_VECTORS)


def _digest(alg: hashes.HashAlgorithm, data: bytes) -> bytes:
    h = hashes.Hash(alg)
    h.update(data)
    return h.finalize()


@dataclass(frozen=True)
class Key:
    private: rsa.RSAPrivateKey | None
    n: int
    e: int
    bits: int
    size: int
    raw_private: Callable[[int], int]
    raw_public: Callable[[int], int]

    def verify(self, signature: bytes, digest: bytes, pad: padding.AsymmetricPadding, alg) -> None:
        verify_with_raw(self.raw_public, self.bits, signature, digest, pad, alg, modulus=self.n)


def _key_from_numbers(
    n: int, e: int, d: int, p: int, q: int, dmp1: int, dmq1: int, iqmp: int, private=None
) -> Key:
    return Key(
        private=private,
        n=n,
        e=e,
        bits=n.bit_length(),
        size=(n.bit_length() + 7) // 8,
        raw_private=lambda m: rsa_private_raw(m, n, d, p, q, dmp1, dmq1, iqmp),
        raw_public=lambda c: rsa_public_raw(c, n, e),
    )


def _vector_key(k: RSAKey) -> Key:
    return _key_from_numbers(k.n, k.e, k.d, k.p, k.q, k.dmp1, k.dmq1, k.iqmp)


@pytest.fixture(scope="module", params=[1024, 2048, 3072], ids=lambda bits: f"rsa{bits}")
def key(request: pytest.FixtureRequest) -> Key:
    private = rsa.generate_private_key(public_exponent=65537, key_size=request.param)
    nums = private.private_numbers()
    pub = nums.public_numbers
    return _key_from_numbers(
        pub.n, pub.e, nums.d, nums.p, nums.q, nums.dmp1, nums.dmq1, nums.iqmp, private
    )


def _sha256(data: bytes) -> bytes:
    return _digest(hashes.SHA256(), data)


def test_i2osp_os2ip_round_trip_and_length() -> None:
    assert i2osp(0x0102, 4) == b"\x00\x00\x01\x02"
    assert os2ip(b"\x00\x00\x01\x02") == 0x0102
    assert i2osp(0, 0) == b""
    assert os2ip(i2osp(2**2047 + 5, 256)) == 2**2047 + 5


def test_i2osp_rejects_too_large_and_negative() -> None:
    with pytest.raises(ValueError, match="too large"):
        i2osp(256, 1)
    with pytest.raises(ValueError):
        i2osp(-1, 4)


def test_mgf1_output_is_prefix_consistent_and_hash_sized_blocks() -> None:
    seed = b"seed"
    long = mgf1(seed, 100, hashes.SHA256())
    assert len(long) == 100
    assert mgf1(seed, 33, hashes.SHA256()) == long[:33]
    assert long[:32] == _sha256(seed + b"\x00\x00\x00\x00")
    assert long[32:64] == _sha256(seed + b"\x00\x00\x00\x01")
    assert mgf1(seed, 0, hashes.SHA256()) == b""


def test_raw_crt_and_plain_private_agree_and_invert_public(key: Key) -> None:
    nums = key.private.private_numbers()
    m = os2ip(os.urandom(key.size - 1))
    plain = rsa_private_raw(m, key.n, nums.d)
    assert plain == key.raw_private(m)
    assert rsa_public_raw(plain, key.n, key.e) == m


@pytest.mark.parametrize("value", [0, -1, "n", "n+1"])
def test_raw_operations_reject_out_of_range_input(key: Key, value: int | str) -> None:
    nums = key.private.private_numbers()
    m = {"n": key.n, "n+1": key.n + 1}.get(value, value)
    with pytest.raises(ValueError, match=RANGE_ERROR):
        rsa_public_raw(m, key.n, key.e)
    with pytest.raises(ValueError, match=RANGE_ERROR):
        rsa_private_raw(m, key.n, nums.d)
    with pytest.raises(ValueError, match=RANGE_ERROR):
        key.raw_private(m)


def test_raw_private_rejects_partial_crt_parameters(key: Key) -> None:
    nums = key.private.private_numbers()
    with pytest.raises(ValueError, match="CRT"):
        rsa_private_raw(2, key.n, nums.d, nums.p, nums.q)


def test_pss_params_reads_mgf_hash_and_salt_spec() -> None:
    mgf_hash, spec = pss_params(padding.PSS(padding.MGF1(hashes.SHA384()), padding.PSS.AUTO))
    assert isinstance(mgf_hash, hashes.SHA384)
    assert spec is padding.PSS.AUTO
    assert pss_params(padding.PSS(padding.MGF1(hashes.SHA1()), 7))[1] == 7


def test_oaep_params_reads_hashes_and_label() -> None:
    pad = padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA256(), b"label")
    alg, mgf_hash, label = oaep_params(pad)
    assert isinstance(alg, hashes.SHA256)
    assert isinstance(mgf_hash, hashes.SHA1)
    assert label == b"label"
    assert oaep_params(padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None))[2] == b""


@pytest.mark.parametrize(
    ("func", "pad"),
    [
        (pss_params, padding.PKCS1v15()),
        (pss_params, padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None)),
        (oaep_params, padding.PSS(padding.MGF1(hashes.SHA1()), 20)),
        (oaep_params, object()),
    ],
)
def test_param_accessors_reject_other_padding_types(func, pad) -> None:
    with pytest.raises(TypeError, match="expected padding"):
        func(pad)


def test_high_level_helpers_reject_unusable_padding(key: Key) -> None:
    oaep = padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None)
    pss = padding.PSS(padding.MGF1(hashes.SHA256()), 32)
    digest = _sha256(b"x")
    with pytest.raises(TypeError, match="signing"):
        sign_with_raw(key.raw_private, key.bits, digest, oaep, hashes.SHA256())
    with pytest.raises(TypeError, match="verification"):
        key.verify(b"\x00" * key.size, digest, object(), hashes.SHA256())
    with pytest.raises(TypeError, match="encryption"):
        encrypt_with_raw(key.raw_public, key.bits, b"m", pss)
    with pytest.raises(TypeError, match="decryption"):
        decrypt_with_raw(key.raw_private, key.bits, b"\x00" * key.size, pss)


@pytest.mark.parametrize("bits", [1024, 1025, 2048, 3072, 4095])
@pytest.mark.parametrize(
    "alg", [hashes.SHA1(), hashes.SHA256(), hashes.SHA512()], ids=lambda a: a.name
)
def test_salt_length_for_resolves_constants(bits: int, alg: hashes.HashAlgorithm) -> None:
    def pss(spec) -> padding.PSS:
        return padding.PSS(padding.MGF1(alg), spec)

    em_len = (bits - 1 + 7) // 8
    assert salt_length_for(pss(padding.PSS.MAX_LENGTH), alg, bits) == em_len - alg.digest_size - 2
    assert salt_length_for(pss(padding.PSS.MAX_LENGTH), alg, bits, verify=True) is None
    assert salt_length_for(pss(padding.PSS.DIGEST_LENGTH), alg, bits) == alg.digest_size
    assert salt_length_for(pss(11), alg, bits) == 11
    assert salt_length_for(pss(padding.PSS.AUTO), alg, bits, verify=True) is None
    with pytest.raises(ValueError, match="AUTO"):
        salt_length_for(pss(padding.PSS.AUTO), alg, bits)


def test_salt_length_for_max_matches_cryptography(key: Key) -> None:
    pss = padding.PSS(padding.MGF1(hashes.SHA256()), padding.PSS.MAX_LENGTH)
    expected = padding.calculate_max_pss_salt_length(key.private, hashes.SHA256())
    assert salt_length_for(pss, hashes.SHA256(), key.bits) == expected


@pytest.mark.parametrize("alg", SIGNATURE_HASHES, ids=lambda a: a.name)
def test_pkcs1v15_signature_is_byte_identical_to_cryptography(
    key: Key, alg: hashes.HashAlgorithm
) -> None:
    digest = _digest(alg, b"offloaded signature")
    ours = sign_with_raw(key.raw_private, key.bits, digest, padding.PKCS1v15(), alg)
    assert ours == key.private.sign(digest, padding.PKCS1v15(), Prehashed(alg))
    key.verify(ours, digest, padding.PKCS1v15(), alg)


def test_pkcs1v15_signature_accepts_prehashed_hash_argument(key: Key) -> None:
    digest = _sha256(b"prehashed")
    ours = sign_with_raw(
        key.raw_private, key.bits, digest, padding.PKCS1v15(), Prehashed(hashes.SHA256())
    )
    assert ours == key.private.sign(digest, padding.PKCS1v15(), Prehashed(hashes.SHA256()))


def test_pkcs1v15_unsupported_hash_raises_unsupported_algorithm(key: Key) -> None:
    digest = _digest(hashes.SHA3_256(), b"x")
    with pytest.raises(UnsupportedAlgorithm):
        sign_with_raw(key.raw_private, key.bits, digest, padding.PKCS1v15(), hashes.SHA3_256())


def test_digest_info_prefixes_cover_required_hashes() -> None:
    assert set(DIGEST_INFO_PREFIXES) == {a.name for a in SIGNATURE_HASHES}
    for alg in SIGNATURE_HASHES:
        prefix = DIGEST_INFO_PREFIXES[alg.name]
        # The DER lengths inside the prefix must account for the digest that follows it.
        assert prefix[1] == len(prefix) - 2 + alg.digest_size
        assert prefix[-1] == alg.digest_size


def test_signing_rejects_digest_of_wrong_length(key: Key) -> None:
    for pad in (padding.PKCS1v15(), padding.PSS(padding.MGF1(hashes.SHA256()), 32)):
        with pytest.raises(ValueError, match="digest"):
            sign_with_raw(key.raw_private, key.bits, b"\x00" * 31, pad, hashes.SHA256())
        with pytest.raises(ValueError, match="digest"):
            key.verify(b"\x00" * key.size, b"\x00" * 31, pad, hashes.SHA256())


@pytest.mark.parametrize("spec", SALT_SPECS, ids=SALT_IDS)
@pytest.mark.parametrize("alg", PSS_HASHES, ids=lambda a: a.name)
def test_pss_signature_from_raw_verifies_with_cryptography(
    key: Key, alg: hashes.HashAlgorithm, spec
) -> None:
    pad = padding.PSS(padding.MGF1(alg), spec)
    digest = _digest(alg, b"pss from raw")
    signature = sign_with_raw(key.raw_private, key.bits, digest, pad, alg)
    public = key.private.public_key()
    public.verify(signature, digest, pad, Prehashed(alg))
    public.verify(
        signature, digest, padding.PSS(padding.MGF1(alg), padding.PSS.AUTO), Prehashed(alg)
    )
    # cryptography verifies MAX_LENGTH by recovering any salt, so pin the exact length too.
    exact = padding.PSS(padding.MGF1(alg), salt_length_for(pad, alg, key.bits))
    public.verify(signature, digest, exact, Prehashed(alg))


@pytest.mark.parametrize("spec", SALT_SPECS, ids=SALT_IDS)
@pytest.mark.parametrize("alg", PSS_HASHES, ids=lambda a: a.name)
def test_cryptography_pss_signature_verifies_with_raw(
    key: Key, alg: hashes.HashAlgorithm, spec
) -> None:
    pad = padding.PSS(padding.MGF1(alg), spec)
    digest = _digest(alg, b"pss from cryptography")
    signature = key.private.sign(digest, pad, Prehashed(alg))
    key.verify(signature, digest, pad, alg)
    key.verify(signature, digest, padding.PSS(padding.MGF1(alg), padding.PSS.AUTO), alg)


def test_pss_with_mgf_hash_different_from_message_hash_interoperates(key: Key) -> None:
    pad = padding.PSS(padding.MGF1(hashes.SHA1()), 20)
    digest = _sha256(b"mixed hashes")
    ours = sign_with_raw(key.raw_private, key.bits, digest, pad, hashes.SHA256())
    key.private.public_key().verify(ours, digest, pad, Prehashed(hashes.SHA256()))
    theirs = key.private.sign(digest, pad, Prehashed(hashes.SHA256()))
    key.verify(theirs, digest, pad, hashes.SHA256())
    with pytest.raises(InvalidSignature):
        key.verify(theirs, digest, padding.PSS(padding.MGF1(hashes.SHA256()), 20), hashes.SHA256())


def _accepts(verify: Callable[[], None]) -> bool:
    try:
        verify()
    except InvalidSignature:
        return False
    return True


def test_pss_salt_length_acceptance_matches_cryptography(key: Key) -> None:
    alg = hashes.SHA256()
    digest = _sha256(b"salt")
    public = key.private.public_key()
    specs = [padding.PSS.MAX_LENGTH, padding.PSS.DIGEST_LENGTH, 20, padding.PSS.AUTO]
    seen = set()
    for signed_salt in (0, 20, 32, 60):
        signature = sign_with_raw(
            key.raw_private, key.bits, digest, padding.PSS(padding.MGF1(alg), signed_salt), alg
        )
        for spec in specs:
            pad = padding.PSS(padding.MGF1(alg), spec)
            ours = _accepts(lambda s=signature, p=pad: key.verify(s, digest, p, alg))
            theirs = _accepts(
                lambda s=signature, p=pad: public.verify(s, digest, p, Prehashed(alg))
            )
            assert ours == theirs, (signed_salt, spec)
            seen.add(ours)
    assert seen == {True, False}


def test_pss_explicit_salt_length_must_match(key: Key) -> None:
    digest = _sha256(b"salt")
    unsalted = padding.PSS(padding.MGF1(hashes.SHA256()), 0)
    signature = sign_with_raw(key.raw_private, key.bits, digest, unsalted, hashes.SHA256())
    key.verify(signature, digest, unsalted, hashes.SHA256())
    with pytest.raises(InvalidSignature):
        key.verify(
            signature, digest, padding.PSS(padding.MGF1(hashes.SHA256()), 32), hashes.SHA256()
        )


def test_pss_digest_too_large_for_key_is_rejected_like_cryptography(key: Key) -> None:
    alg = hashes.SHA512()
    pad = padding.PSS(padding.MGF1(alg), padding.PSS.DIGEST_LENGTH)
    digest = _digest(alg, b"x")
    fits = key.size >= 2 * alg.digest_size + 2
    if fits:
        signature = sign_with_raw(key.raw_private, key.bits, digest, pad, alg)
        key.private.public_key().verify(signature, digest, pad, Prehashed(alg))
        return
    with pytest.raises(ValueError):
        key.private.sign(digest, pad, Prehashed(alg))
    with pytest.raises(ValueError, match="too large"):
        sign_with_raw(key.raw_private, key.bits, digest, pad, alg)


def test_pss_auto_salt_length_is_rejected_for_signing(key: Key) -> None:
    pad = padding.PSS(padding.MGF1(hashes.SHA256()), padding.PSS.AUTO)
    with pytest.raises(ValueError, match="AUTO"):
        sign_with_raw(key.raw_private, key.bits, _sha256(b"x"), pad, hashes.SHA256())


def test_pss_salt_too_long_for_key_is_rejected(key: Key) -> None:
    pad = padding.PSS(padding.MGF1(hashes.SHA512()), key.size)
    with pytest.raises(ValueError, match="too large"):
        sign_with_raw(
            key.raw_private, key.bits, _digest(hashes.SHA512(), b"x"), pad, hashes.SHA512()
        )


def _signature_paddings() -> list[padding.AsymmetricPadding]:
    return [
        padding.PKCS1v15(),
        padding.PSS(padding.MGF1(hashes.SHA256()), padding.PSS.DIGEST_LENGTH),
        padding.PSS(padding.MGF1(hashes.SHA256()), padding.PSS.AUTO),
    ]


@pytest.mark.parametrize("pad", _signature_paddings(), ids=["pkcs1v15", "pss", "pss-auto"])
def test_tampered_signature_raises_invalid_signature(key: Key, pad) -> None:
    digest = _sha256(b"genuine")
    sign_pad = (
        pad if isinstance(pad, padding.PKCS1v15) else padding.PSS(padding.MGF1(hashes.SHA256()), 32)
    )
    signature = key.private.sign(digest, sign_pad, Prehashed(hashes.SHA256()))
    key.verify(signature, digest, pad, hashes.SHA256())
    for position in (0, key.size // 2, key.size - 1):
        tampered = bytearray(signature)
        tampered[position] ^= 0x01
        with pytest.raises(InvalidSignature):
            key.verify(bytes(tampered), digest, pad, hashes.SHA256())
    with pytest.raises(InvalidSignature):
        key.verify(signature, _sha256(b"forged"), pad, hashes.SHA256())


@pytest.mark.parametrize("pad", _signature_paddings(), ids=["pkcs1v15", "pss", "pss-auto"])
def test_signature_of_wrong_length_or_out_of_range_raises_invalid_signature(key: Key, pad) -> None:
    digest = _sha256(b"genuine")
    signature = sign_with_raw(
        key.raw_private, key.bits, digest, padding.PKCS1v15(), hashes.SHA256()
    )
    bad = [
        signature[:-1],
        b"\x00" + signature,
        signature + b"\x00",
        b"",
        i2osp(key.n, key.size),
        b"\xff" * key.size,
        b"\x00" * key.size,
        i2osp(1, key.size),
    ]
    for candidate in bad:
        with pytest.raises(InvalidSignature):
            key.verify(candidate, digest, pad, hashes.SHA256())


def test_signature_congruent_mod_n_is_rejected_even_if_engine_reduces() -> None:
    # A 1025-bit vector key leaves room for s + n in k bytes; a sloppy engine computing
    # (s + n)^e mod n would accept it, so the range check must happen in verify_with_raw.
    example = next(ex for ex in SIGN_EXAMPLES if ex.key.bits == 1025)
    k = _vector_key(example.key)
    digest = _digest(hashes.SHA1(), example.message)
    shifted = i2osp(os2ip(example.result) + k.n, k.size)

    def reducing_public(s: int) -> int:
        return pow(s, k.e, k.n)

    verify_with_raw(
        reducing_public,
        k.bits,
        example.result,
        digest,
        padding.PKCS1v15(),
        hashes.SHA1(),
        modulus=k.n,
    )
    with pytest.raises(InvalidSignature):
        verify_with_raw(
            reducing_public,
            k.bits,
            shifted,
            digest,
            padding.PKCS1v15(),
            hashes.SHA1(),
            modulus=k.n,
        )


def test_verify_rejects_key_bits_not_matching_modulus(key: Key) -> None:
    with pytest.raises(ValueError, match="modulus"):
        verify_with_raw(
            key.raw_public,
            key.bits + 1,
            b"\x00" * key.size,
            _sha256(b"x"),
            padding.PKCS1v15(),
            hashes.SHA256(),
            modulus=key.n,
        )


OAEP_CASES = [
    (hashes.SHA1(), None),
    (hashes.SHA1(), b"a label"),
    (hashes.SHA256(), None),
    (hashes.SHA256(), b"another label"),
]
OAEP_IDS = ["sha1", "sha1-label", "sha256", "sha256-label"]


@pytest.mark.parametrize(("alg", "label"), OAEP_CASES, ids=OAEP_IDS)
def test_oaep_round_trips_with_cryptography_both_ways(key: Key, alg, label) -> None:
    pad = padding.OAEP(padding.MGF1(alg), alg, label)
    for message in (b"", b"m", os.urandom(key.size - 2 * alg.digest_size - 2)):
        ours = encrypt_with_raw(key.raw_public, key.bits, message, pad)
        assert len(ours) == key.size
        assert key.private.decrypt(ours, pad) == message
        theirs = key.private.public_key().encrypt(message, pad)
        assert decrypt_with_raw(key.raw_private, key.bits, theirs, pad, modulus=key.n) == message


def test_oaep_with_mgf_hash_different_from_label_hash_round_trips(key: Key) -> None:
    pad = padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA256(), b"x")
    ours = encrypt_with_raw(key.raw_public, key.bits, b"mixed", pad)
    assert key.private.decrypt(ours, pad) == b"mixed"
    theirs = key.private.public_key().encrypt(b"mixed", pad)
    assert decrypt_with_raw(key.raw_private, key.bits, theirs, pad) == b"mixed"


def test_pkcs1v15_encryption_round_trips_with_cryptography_both_ways(key: Key) -> None:
    pad = padding.PKCS1v15()
    for message in (b"", b"m", os.urandom(key.size - 11)):
        ours = encrypt_with_raw(key.raw_public, key.bits, message, pad)
        assert key.private.decrypt(ours, pad) == message
        theirs = key.private.public_key().encrypt(message, pad)
        assert decrypt_with_raw(key.raw_private, key.bits, theirs, pad) == message


def test_encryption_rejects_message_too_long(key: Key) -> None:
    oaep = padding.OAEP(padding.MGF1(hashes.SHA256()), hashes.SHA256(), None)
    with pytest.raises(ValueError, match="too long"):
        encrypt_with_raw(key.raw_public, key.bits, b"\x00" * (key.size - 65), oaep)
    with pytest.raises(ValueError, match="too long"):
        encrypt_with_raw(key.raw_public, key.bits, b"\x00" * (key.size - 10), padding.PKCS1v15())


def test_pkcs1v15_padding_string_is_nonzero_and_at_least_eight_bytes() -> None:
    em = eme_pkcs1v15_encode(b"msg", 64)
    assert em[:2] == b"\x00\x02"
    assert 0 not in em[2:-4]
    assert em[-4:] == b"\x00msg"
    with pytest.raises(ValueError):
        eme_pkcs1v15_encode(b"msg", 64, random_bytes=b"\x01" * 57 + b"\x00")
    with pytest.raises(ValueError):
        eme_pkcs1v15_encode(b"x" * 54, 64)


def _raw_encrypt(key: Key, em: bytes) -> bytes:
    return i2osp(key.raw_public(os2ip(em)), key.size)


@pytest.mark.parametrize(("alg", "label"), OAEP_CASES, ids=OAEP_IDS)
def test_tampered_oaep_ciphertext_raises_decryption_failed(key: Key, alg, label) -> None:
    pad = padding.OAEP(padding.MGF1(alg), alg, label)
    ciphertext = bytearray(key.private.public_key().encrypt(b"secret", pad))
    ciphertext[key.size // 2] ^= 0x80
    with pytest.raises(ValueError, match=DECRYPTION_FAILED):
        decrypt_with_raw(key.raw_private, key.bits, bytes(ciphertext), pad)
    genuine = key.private.public_key().encrypt(b"secret", pad)
    other_label = padding.OAEP(padding.MGF1(alg), alg, (label or b"") + b"!")
    with pytest.raises(ValueError, match=DECRYPTION_FAILED):
        decrypt_with_raw(key.raw_private, key.bits, genuine, other_label)


def _oaep_em_from_db(db: bytes, y: int, alg: hashes.HashAlgorithm) -> bytes:
    seed = os.urandom(alg.digest_size)
    masked_db = bytes(a ^ b for a, b in zip(db, mgf1(seed, len(db), alg), strict=True))
    seed_mask = mgf1(masked_db, alg.digest_size, alg)
    return bytes([y]) + bytes(a ^ b for a, b in zip(seed, seed_mask, strict=True)) + masked_db


def test_malformed_oaep_encodings_raise_decryption_failed(key: Key) -> None:
    alg = hashes.SHA256()
    pad = padding.OAEP(padding.MGF1(alg), alg, None)
    lhash = _digest(alg, b"")
    db_len = key.size - alg.digest_size - 1
    ps = b"\x00" * (db_len - alg.digest_size - len(b"\x01msg"))
    cases = {
        "valid": (lhash + ps + b"\x01msg", 0),
        "nonzero first byte": (lhash + ps + b"\x01msg", 1),
        "wrong label hash": (_digest(alg, b"x") + ps + b"\x01msg", 0),
        "no 0x01 separator": (lhash + ps + b"\x00msg", 0),
        "nonzero byte before separator": (lhash + b"\x02" + ps[1:] + b"\x01msg", 0),
        "all zero padding": (lhash + b"\x00" * (db_len - alg.digest_size), 0),
    }
    for name, (db, y) in cases.items():
        assert len(db) == db_len, name
        ciphertext = _raw_encrypt(key, _oaep_em_from_db(db, y, alg))
        if name == "valid":
            assert decrypt_with_raw(key.raw_private, key.bits, ciphertext, pad) == b"msg"
            continue
        with pytest.raises(ValueError, match=DECRYPTION_FAILED):
            decrypt_with_raw(key.raw_private, key.bits, ciphertext, pad)


def test_malformed_pkcs1v15_encodings_raise_decryption_failed(key: Key) -> None:
    k = key.size
    nonzero = b"\x5a" * k
    cases = {
        "first byte not zero": b"\x01\x02" + nonzero[: k - 6] + b"\x00msg",
        "block type 1": b"\x00\x01" + nonzero[: k - 6] + b"\x00msg",
        "no zero separator": b"\x00\x02" + nonzero[: k - 2],
        "padding of 7 bytes": b"\x00\x02" + nonzero[:7] + b"\x00" + nonzero[: k - 10],
        "padding of 0 bytes": b"\x00\x02\x00" + nonzero[: k - 3],
    }
    for name, em in cases.items():
        assert len(em) == k, name
        with pytest.raises(ValueError, match=DECRYPTION_FAILED):
            decrypt_with_raw(key.raw_private, key.bits, _raw_encrypt(key, em), padding.PKCS1v15())
        with pytest.raises(ValueError, match=DECRYPTION_FAILED):
            eme_pkcs1v15_decode(em, k)
    shortest_padding = b"\x00\x02" + nonzero[:8] + b"\x00" + nonzero[: k - 11]
    decrypted = decrypt_with_raw(
        key.raw_private, key.bits, _raw_encrypt(key, shortest_padding), padding.PKCS1v15()
    )
    assert decrypted == nonzero[: k - 11]
    empty = b"\x00\x02" + nonzero[: k - 3] + b"\x00"
    assert (
        decrypt_with_raw(key.raw_private, key.bits, _raw_encrypt(key, empty), padding.PKCS1v15())
        == b""
    )


def test_tampered_pkcs1v15_vector_ciphertext_raises_decryption_failed() -> None:
    # A fixed key and ciphertext, so that the (about 2**-16) chance of a flipped ciphertext still
    # decoding cannot make this flaky; the flipped value was checked to be malformed.
    example = CRYPT_EXAMPLES[0]
    k = _vector_key(example.key)
    tampered = bytearray(example.result)
    tampered[-1] ^= 0x01
    with pytest.raises(ValueError, match=DECRYPTION_FAILED):
        decrypt_with_raw(k.raw_private, k.bits, bytes(tampered), padding.PKCS1v15())


@pytest.mark.parametrize(
    "pad",
    [padding.PKCS1v15(), padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None)],
    ids=["pkcs1v15", "oaep"],
)
def test_ciphertext_out_of_range_raises_decryption_failed(key: Key, pad) -> None:
    for value in (0, key.n, 2 ** (8 * key.size) - 1):
        ciphertext = i2osp(value, key.size)
        with pytest.raises(ValueError, match=DECRYPTION_FAILED):
            decrypt_with_raw(key.raw_private, key.bits, ciphertext, pad)
        with pytest.raises(ValueError, match=DECRYPTION_FAILED):
            decrypt_with_raw(key.raw_private, key.bits, ciphertext, pad, modulus=key.n)


@pytest.mark.parametrize(
    "pad",
    [padding.PKCS1v15(), padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None)],
    ids=["pkcs1v15", "oaep"],
)
def test_ciphertext_of_wrong_length_raises_clear_value_error(key: Key, pad) -> None:
    ciphertext = key.private.public_key().encrypt(b"m", pad)
    for bad in (ciphertext[1:], b"\x00" + ciphertext, b""):
        with pytest.raises(ValueError, match="Ciphertext length must be equal to key size"):
            decrypt_with_raw(key.raw_private, key.bits, bad, pad)


def test_encoding_level_decoders_reject_wrong_lengths() -> None:
    with pytest.raises(ValueError, match=DECRYPTION_FAILED):
        eme_oaep_decode(b"\x00" * 41, 42, hashes.SHA1(), hashes.SHA1())
    with pytest.raises(ValueError, match=DECRYPTION_FAILED):
        eme_oaep_decode(b"\x00" * 40, 40, hashes.SHA1(), hashes.SHA1())
    with pytest.raises(ValueError, match=DECRYPTION_FAILED):
        eme_pkcs1v15_decode(b"\x00\x02" + b"\x01" * 8, 10)


def test_emsa_pss_verify_rejects_bad_trailer_and_top_bits() -> None:
    alg = hashes.SHA256()
    digest = _sha256(b"x")
    em = emsa_pss_encode(digest, alg, alg, 32, 1023, salt=b"s" * 32)
    assert emsa_pss_verify(digest, em, alg, alg, 32, 1023)
    assert emsa_pss_verify(digest, em, alg, alg, None, 1023)
    assert not emsa_pss_verify(digest, em[:-1] + b"\xbd", alg, alg, 32, 1023)
    assert not emsa_pss_verify(digest, bytes([em[0] | 0x80]) + em[1:], alg, alg, 32, 1023)
    assert not emsa_pss_verify(digest, em, alg, alg, 31, 1023)
    assert not emsa_pss_verify(digest, em[1:], alg, alg, 32, 1023)


def test_emsa_pkcs1v15_encode_layout_and_short_length() -> None:
    digest = _sha256(b"x")
    em = emsa_pkcs1v15_encode(digest, hashes.SHA256(), 128)
    t = DIGEST_INFO_PREFIXES["sha256"] + digest
    assert em == b"\x00\x01" + b"\xff" * (128 - len(t) - 3) + b"\x00" + t
    with pytest.raises(ValueError, match="too short"):
        emsa_pkcs1v15_encode(digest, hashes.SHA256(), len(t) + 10)


def _ids(examples: list[Example]) -> list[str]:
    return [ex.name for ex in examples]


def test_vector_files_parse_completely() -> None:
    assert len(OAEP_EXAMPLES) == 60
    assert len(PSS_EXAMPLES) == 60
    assert len(SIGN_EXAMPLES) == 300
    assert len(CRYPT_EXAMPLES) == 300
    for examples in (OAEP_EXAMPLES, PSS_EXAMPLES, SIGN_EXAMPLES, CRYPT_EXAMPLES):
        for ex in examples:
            assert ex.key.p * ex.key.q == ex.key.n
            assert len(ex.result) == ex.key.size
    assert {ex.key.bits for ex in PSS_EXAMPLES} == {*range(1024, 1032), 1536, 2048}


def test_vector_keys_crt_and_plain_private_agree() -> None:
    keys = {ex.key for ex in OAEP_EXAMPLES + PSS_EXAMPLES + SIGN_EXAMPLES + CRYPT_EXAMPLES}
    for k in keys:
        m = os2ip(b"\x01" + os.urandom(k.size - 2))
        crt = rsa_private_raw(m, k.n, k.d, k.p, k.q, k.dmp1, k.dmq1, k.iqmp)
        assert crt == rsa_private_raw(m, k.n, k.d)
        assert rsa_public_raw(crt, k.n, k.e) == m


@pytest.mark.parametrize("example", OAEP_EXAMPLES, ids=_ids(OAEP_EXAMPLES))
def test_oaep_vector_reproduces_published_ciphertext(example: Example) -> None:
    k = _vector_key(example.key)
    sha1 = hashes.SHA1()
    em = eme_oaep_encode(example.message, k.size, sha1, sha1, seed=example.randomness)
    assert _raw_encrypt(k, em) == example.result
    pad = padding.OAEP(padding.MGF1(sha1), sha1, None)
    assert decrypt_with_raw(k.raw_private, k.bits, example.result, pad, modulus=k.n) == (
        example.message
    )


@pytest.mark.parametrize("example", PSS_EXAMPLES, ids=_ids(PSS_EXAMPLES))
def test_pss_vector_reproduces_published_signature(example: Example) -> None:
    k = _vector_key(example.key)
    sha1 = hashes.SHA1()
    digest = _digest(sha1, example.message)
    salt = example.randomness
    assert salt is not None
    em = emsa_pss_encode(digest, sha1, sha1, len(salt), k.bits - 1, salt=salt)
    assert i2osp(k.raw_private(os2ip(em)), k.size) == example.result
    for spec in (len(salt), padding.PSS.AUTO):
        k.verify(example.result, digest, padding.PSS(padding.MGF1(sha1), spec), sha1)


@pytest.mark.parametrize("example", SIGN_EXAMPLES, ids=_ids(SIGN_EXAMPLES))
def test_pkcs1v15_sign_vector_reproduces_published_signature(example: Example) -> None:
    k = _vector_key(example.key)
    digest = _digest(hashes.SHA1(), example.message)
    signature = sign_with_raw(k.raw_private, k.bits, digest, padding.PKCS1v15(), hashes.SHA1())
    assert signature == example.result
    k.verify(example.result, digest, padding.PKCS1v15(), hashes.SHA1())


@pytest.mark.parametrize("example", CRYPT_EXAMPLES, ids=_ids(CRYPT_EXAMPLES))
def test_pkcs1v15_crypt_vector_reproduces_published_ciphertext(example: Example) -> None:
    k = _vector_key(example.key)
    em = eme_pkcs1v15_encode(example.message, k.size, random_bytes=example.randomness)
    assert _raw_encrypt(k, em) == example.result
    decrypted = decrypt_with_raw(k.raw_private, k.bits, example.result, padding.PKCS1v15())
    assert decrypted == example.message


def _pss_encoding_with_padding_byte(
    digest: bytes, alg: hashes.HashAlgorithm, salt: bytes, em_bits: int, at: int, value: int
) -> bytes:
    """EMSA-PSS built by hand with byte ``at`` of the zero padding string set to ``value``."""
    h_len = alg.digest_size
    em_len = -(-em_bits // 8)
    h = _digest(alg, b"\x00" * 8 + digest + salt)
    ps = bytearray(em_len - len(salt) - h_len - 2)
    ps[at] = value
    db = bytes(ps) + b"\x01" + salt
    masked = bytearray(a ^ b for a, b in zip(db, mgf1(h, len(db), alg), strict=True))
    masked[0] &= 0xFF >> (8 * em_len - em_bits)
    return bytes(masked) + h + b"\xbc"


@pytest.mark.parametrize("value", [0x00, 0x01, 0x5A], ids=["zero", "one", "other"])
def test_pss_padding_string_must_be_all_zero_like_openssl(key: Key, value: int) -> None:
    alg = hashes.SHA256()
    message = b"nonzero padding byte"
    digest = _sha256(message)
    em_bits = key.bits - 1
    em = _pss_encoding_with_padding_byte(digest, alg, b"\x33" * 32, em_bits, at=3, value=value)
    signature = i2osp(key.raw_private(os2ip(em)), key.size)
    for salt in (32, padding.PSS.AUTO):
        pad = padding.PSS(mgf=padding.MGF1(alg), salt_length=salt)
        if value == 0:
            key.private.public_key().verify(signature, message, pad, alg)
            key.verify(signature, digest, pad, alg)
            continue
        with pytest.raises(InvalidSignature):
            key.private.public_key().verify(signature, message, pad, alg)
        with pytest.raises(InvalidSignature):
            key.verify(signature, digest, pad, alg)
