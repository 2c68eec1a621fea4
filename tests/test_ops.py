"""ops.CONTRACT: the table is complete, validation follows it, primitives and engines keep to it."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes as _hashes
from cryptography.hazmat.primitives.asymmetric import dsa as _dsa
from cryptography.hazmat.primitives.asymmetric import ec as _ec
from cryptography.hazmat.primitives.asymmetric import ed448 as _ed448
from cryptography.hazmat.primitives.asymmetric import ed25519 as _ed25519
from cryptography.hazmat.primitives.asymmetric import mldsa as _mldsa
from cryptography.hazmat.primitives.asymmetric import mlkem as _mlkem
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import x25519 as _x25519
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
from doubles import TakeAllEngine
from dsa_warning import IGNORE_DSA_WARNING, without_dsa_warning
from sample_keys import DH_KEY, DH_PEER, DH_PEER_RAW, DH_RAW, EC_KEY, EC_PEER, OAEP, RSA_KEY

from cryptoffload import (
    Policy,
    Provider,
    dh,
    drbg,
    dsa,
    ec,
    ed448,
    ed25519,
    keywrap,
    mldsa,
    mlkem,
    rsa,
    x448,
    x25519,
)
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.cmac import CMAC
from cryptoffload.core import ops, validate
from cryptoffload.engines.software import SoftwareEngine
from cryptoffload.errors import Unavailable
from cryptoffload.gmac import GMAC
from cryptoffload.hashes import SHA256, Hash, digest
from cryptoffload.hmac import HMAC
from cryptoffload.kdf.argon2 import Argon2id
from cryptoffload.kdf.pbkdf2 import PBKDF2HMAC
from cryptoffload.kdf.scrypt import Scrypt
from cryptoffload.modes import CBC, CFB, CTR, ECB, OFB

KEY = bytes(range(16))
DIGEST = _hashes.Hash(_hashes.SHA256())
DIGEST.update(b"message")
SHA256_DIGEST = DIGEST.finalize()
PSS = padding.PSS(padding.MGF1(_hashes.SHA256()), padding.PSS.MAX_LENGTH)
ED_KEY = _ed25519.Ed25519PrivateKey.generate()
ED448_KEY = _ed448.Ed448PrivateKey.generate()
X_KEY = _x25519.X25519PrivateKey.generate()
DSA_KEY = without_dsa_warning(lambda: _dsa.generate_private_key(2048))
KEM_KEY = _mlkem.MLKEM768PrivateKey.generate()
MLDSA_KEY = _mldsa.MLDSA44PrivateKey.generate()


def _sealed() -> bytes:
    return AESGCM(KEY, provider=Provider([])).encrypt(bytes(12), b"plaintext", b"aad")


#: One valid Op of every family/kind in the contract, built by its named fields.
SAMPLES: dict[tuple[str, str], Any] = {
    ("cipher", "encrypt"): lambda: ops.make(
        "cipher", "aes-128-cbc", "encrypt", key=KEY, iv=bytes(16), data=bytes(32)
    ),
    ("cipher", "decrypt"): lambda: ops.make(
        "cipher", "aes-128-ecb", "decrypt", key=KEY, data=bytes(32)
    ),
    ("aead", "encrypt"): lambda: ops.make(
        "aead", "aes-128-gcm", "encrypt", key=KEY, iv=bytes(12), data=b"plain", tag_length=16
    ),
    ("aead", "decrypt"): lambda: ops.make(
        "aead",
        "aes-128-gcm",
        "decrypt",
        key=KEY,
        iv=bytes(12),
        data=_sealed(),
        aad=b"aad",
        tag_length=16,
    ),
    ("hash", "digest"): lambda: ops.make("hash", "sha256", "digest", data=b"message"),
    ("mac", "mac"): lambda: ops.make(
        "mac", "gmac-aes-128", "mac", key=KEY, iv=bytes(12), data=b"message", tag_length=12
    ),
    ("rsa", "sign"): lambda: ops.make(
        "rsa",
        "rsa-2048-private",
        "sign",
        key=RSA_KEY,
        digest=SHA256_DIGEST,
        padding=PSS,
        hash_alg=_hashes.SHA256(),
    ),
    ("rsa", "verify"): lambda: ops.make(
        "rsa",
        "rsa-2048-public",
        "verify",
        key=RSA_KEY.public_key(),
        digest=SHA256_DIGEST,
        signature=RSA_KEY.sign(SHA256_DIGEST, PSS, Prehashed(_hashes.SHA256())),
        padding=PSS,
        hash_alg=_hashes.SHA256(),
    ),
    ("rsa", "encrypt"): lambda: ops.make(
        "rsa", "rsa-2048-public", "encrypt", key=RSA_KEY.public_key(), data=b"m", padding=OAEP
    ),
    ("rsa", "decrypt"): lambda: ops.make(
        "rsa",
        "rsa-2048-private",
        "decrypt",
        key=RSA_KEY,
        data=RSA_KEY.public_key().encrypt(b"m", OAEP),
        padding=OAEP,
    ),
    ("rsa", "raw"): lambda: ops.make("rsa", "rsa-2048-private", "raw", key=RSA_KEY, value=12345),
    ("ecdsa", "sign"): lambda: ops.make(
        "ecdsa",
        "ecdsa-p256-sign",
        "sign",
        key=EC_KEY,
        digest=SHA256_DIGEST,
        hash_alg=_hashes.SHA256(),
        deterministic=True,
    ),
    ("ecdsa", "verify"): lambda: ops.make(
        "ecdsa",
        "ecdsa-p256-verify",
        "verify",
        key=EC_KEY.public_key(),
        digest=SHA256_DIGEST,
        signature=EC_KEY.sign(SHA256_DIGEST, _ec.ECDSA(Prehashed(_hashes.SHA256()))),
        hash_alg=_hashes.SHA256(),
    ),
    ("ecdh", "exchange"): lambda: ops.make(
        "ecdh", "ecdh-p256", "exchange", key=EC_KEY, peer=EC_PEER
    ),
    ("dh", "exchange"): lambda: ops.make(
        "dh", "ffdhe2048", "exchange", key=DH_RAW, peer=DH_PEER_RAW
    ),
    ("eddsa", "sign"): lambda: ops.make("eddsa", "ed25519-sign", "sign", key=ED_KEY, data=b"m"),
    ("eddsa", "verify"): lambda: ops.make(
        "eddsa",
        "ed448-verify",
        "verify",
        key=ED448_KEY.public_key(),
        data=b"m",
        signature=ED448_KEY.sign(b"m"),
    ),
    ("xdh", "exchange"): lambda: ops.make(
        "xdh",
        "x25519",
        "exchange",
        key=X_KEY,
        peer=_x25519.X25519PrivateKey.generate().public_key(),
    ),
    ("dsa", "sign"): lambda: ops.make(
        "dsa", "dsa-2048-sign", "sign", key=DSA_KEY, digest=SHA256_DIGEST, hash_alg=_hashes.SHA256()
    ),
    ("dsa", "verify"): lambda: ops.make(
        "dsa",
        "dsa-2048-verify",
        "verify",
        key=DSA_KEY.public_key(),
        digest=SHA256_DIGEST,
        signature=DSA_KEY.sign(SHA256_DIGEST, Prehashed(_hashes.SHA256())),
        hash_alg=_hashes.SHA256(),
    ),
    ("rng", "seed"): lambda: ops.make("rng", "drbg", "seed", length=48),
    ("kdf", "derive"): lambda: ops.make(
        "kdf",
        "argon2id",
        "derive",
        key=b"password",
        salt=bytes(8),
        length=16,
        params=(1, 1, 8),
        aad=b"ad",
        secret=b"pepper",
    ),
    ("keywrap", "wrap"): lambda: ops.make(
        "keywrap", "aes-128-keywrap", "wrap", key=KEY, data=bytes(16)
    ),
    ("keywrap", "unwrap"): lambda: ops.make(
        "keywrap",
        "aes-128-keywrap-pad",
        "unwrap",
        key=KEY,
        data=SoftwareEngine().run(ops.KeywrapOp("aes-128-keywrap-pad", "wrap", KEY, b"k")),
    ),
    ("mlkem", "encapsulate"): lambda: ops.make(
        "mlkem", "mlkem-768-encap", "encapsulate", key=KEM_KEY.public_key()
    ),
    ("mlkem", "decapsulate"): lambda: ops.make(
        "mlkem",
        "mlkem-768-decap",
        "decapsulate",
        key=KEM_KEY,
        data=KEM_KEY.public_key().encapsulate()[1],
    ),
    ("mldsa", "sign"): lambda: ops.make(
        "mldsa", "mldsa-44-sign", "sign", key=MLDSA_KEY, data=b"m", context=b"c"
    ),
    ("mldsa", "verify"): lambda: ops.make(
        "mldsa",
        "mldsa-44-verify",
        "verify",
        key=MLDSA_KEY.public_key(),
        data=b"m",
        signature=MLDSA_KEY.sign(b"m"),
    ),
}


def test_the_contract_validation_and_samples_list_the_same_family_kinds():
    checked = {(family, kind) for family, kinds in validate.OP_CHECKS.items() for kind in kinds}
    assert set(ops.CONTRACT) == checked == set(SAMPLES)


@pytest.mark.parametrize("key", list(ops.CONTRACT), ids=["/".join(k) for k in ops.CONTRACT])
def test_each_entry_names_fields_its_record_class_has_and_the_field_table_explains(key):
    entry = ops.CONTRACT[key]
    cls = ops.OP_CLASSES[key[0]]
    assert cls.family == key[0]
    named = entry.required + entry.optional
    assert len(set(named)) == len(named)
    assert set(named) <= set(cls.FIELDS) <= set(ops.FIELDS)
    assert entry.result and entry.returns is not None


def test_make_refuses_unknown_kinds_unknown_fields_and_missing_required_fields():
    with pytest.raises(ValueError, match="no cipher/transmogrify"):
        ops.make("cipher", "aes-128-ecb", "transmogrify", key=KEY, data=bytes(16))
    with pytest.raises(ValueError, match="no field tag"):
        ops.make("aead", "aes-128-gcm", "decrypt", key=KEY, iv=bytes(12), data=b"", tag=b"")
    with pytest.raises(ValueError, match="needs data, tag_length"):
        ops.make("aead", "aes-128-gcm", "encrypt", key=KEY, iv=bytes(12))


def test_validation_refuses_a_kind_or_family_the_contract_does_not_list():
    with pytest.raises(ValueError, match=r"ops\.CONTRACT"):
        validate.validate_op(ops.CipherOp("aes-128-ecb", "sign", KEY, None, bytes(16)))
    quantum = type("QuantumOp", (ops.CipherOp,), {"family": "quantum"})
    with pytest.raises(ValueError, match=r"ops\.CONTRACT"):
        validate.validate_op(quantum("aes-128-ecb", "encrypt", KEY, None, bytes(16)))


def test_op_reprs_name_the_record_and_never_the_fields():
    op = SAMPLES[("aead", "decrypt")]()
    assert repr(op) == "<AeadOp aead/decrypt aes-128-gcm size=9>"
    assert KEY.hex() not in repr(op) and repr(KEY) not in repr(op)


# -- every in-tree engine answers with the documented type, or declines --------------------------


def _afalg_stand_in() -> Any:
    """The AF_ALG engine over stand-in sockets that compute real answers (no AF_ALG here)."""
    from test_afalg_standin import stand_in_engine

    from cryptoffload.engines.afalg import KERNEL_NAMES

    return stand_in_engine(*KERNEL_NAMES)


def _cryptodev_stand_in() -> Any:
    """The cryptodev engine over the stand-in of /dev/crypto (removed when the test ends)."""
    import cryptodev_standin

    from cryptoffload.engines.cryptodev import CryptodevEngine

    cryptodev_standin.install()
    return CryptodevEngine()


IN_TREE_ENGINES = {
    "software": SoftwareEngine,
    "afalg": _afalg_stand_in,
    "cryptodev": _cryptodev_stand_in,
}
#: The families each engine must answer (the others it may decline).
ANSWERS = {
    "software": {family for family, _ in ops.CONTRACT},
    "afalg": {"cipher", "aead", "hash", "mac", "rng"},
    "cryptodev": {"cipher", "aead", "hash"},  # its MACs are HMAC only (the sample is GMAC)
}


@pytest.mark.parametrize("engine_name", list(IN_TREE_ENGINES))
@pytest.mark.parametrize("key", list(SAMPLES), ids=["/".join(k) for k in SAMPLES])
def test_in_tree_engines_answer_each_family_kind_with_the_documented_type_or_decline(
    engine_name, key
):
    engine = IN_TREE_ENGINES[engine_name]()
    op = SAMPLES[key]()
    validate.validate_op(op)
    entry = ops.CONTRACT[key]
    try:
        result = engine.run(op)
    except Unavailable:
        assert key[0] not in ANSWERS[engine_name], f"{engine_name} declined {key}"
        return
    assert isinstance(result, entry.returns), entry.result
    if key == ("aead", "encrypt"):
        assert len(result) == len(op.data) + op.tag_length
    if key == ("aead", "decrypt"):
        assert result == b"plaintext"
    if key == ("rng", "seed"):
        assert len(result) == op.length
    if key == ("keywrap", "unwrap"):
        assert result == b"k"
    if key == ("mlkem", "encapsulate"):
        assert len(result) == 2 and KEM_KEY.decapsulate(result[1]) == result[0]


@IGNORE_DSA_WARNING
def test_a_failed_check_is_an_answer_the_contract_lists():
    op = SAMPLES[("ecdsa", "verify")]()
    bad = ops.EcdsaOp(op.alg, "verify", op.key, bytes(32), op.hash_alg, signature=op.signature)
    assert InvalidSignature in ops.CONTRACT[("ecdsa", "verify")].answers
    with pytest.raises(InvalidSignature):
        SoftwareEngine().run(bad)


# -- every primitive builds ops that set exactly the contract's fields -------------------------


def _drive_every_primitive(p: Provider) -> None:
    for mode in (ECB(), CBC(bytes(16)), CTR(bytes(16)), CFB(bytes(16)), OFB(bytes(16))):
        for make in (
            Cipher(algorithms.AES(KEY), mode, provider=p).encryptor,
            Cipher(algorithms.AES(KEY), mode, provider=p).decryptor,
        ):
            make().update(bytes(32))
    for aead in (AESGCM(KEY, provider=p), AESGCM(KEY, 8, provider=p), AESCCM(KEY, provider=p)):
        nonce = bytes(12)
        aead.decrypt(nonce, aead.encrypt(nonce, b"data", b"aad"), b"aad")
    digest(b"message", SHA256(), provider=p)
    for ctx in (
        Hash(SHA256(), provider=p),
        HMAC(KEY, SHA256(), provider=p),
        CMAC(algorithms.AES(KEY), provider=p),
        GMAC(KEY, bytes(12), provider=p),
    ):
        ctx.update(b"message")
        ctx.finalize()
    private = rsa.RSAPrivateKey(RSA_KEY, provider=p)
    public = private.public_key()
    public.verify(private.sign(b"m", PSS, SHA256()), b"m", PSS, SHA256())
    private.decrypt(public.encrypt(b"m", OAEP), OAEP)
    private.raw_private(public.raw_public(5))
    ec_key = ec.EllipticCurvePrivateKey(EC_KEY, provider=p)
    for deterministic in (False, True):
        signature_algorithm = ec.ECDSA(SHA256(), deterministic_signing=deterministic)
        signature = ec_key.sign(b"m", signature_algorithm)
        ec_key.public_key().verify(signature, b"m", signature_algorithm)
    ec_key.exchange(ec.ECDH(), ec.EllipticCurvePublicKey(EC_PEER))
    dh.DHPrivateKey(DH_KEY, provider=p).exchange(dh.DHPublicKey(DH_PEER))
    for cls in (ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey):
        signer = cls.generate(provider=p)
        signer.public_key().verify(signer.sign(b"m"), b"m")
    for cls in (x25519.X25519PrivateKey, x448.X448PrivateKey):
        cls.generate(provider=p).exchange(cls.generate().public_key())
    dsa_key = dsa.DSAPrivateKey(DSA_KEY, provider=p)
    dsa_key.public_key().verify(dsa_key.sign(b"m", SHA256()), b"m", SHA256())
    drbg.Drbg(provider=p).random_bytes(16)
    PBKDF2HMAC(SHA256(), 16, b"salt", 2, provider=p).derive(b"password")
    Scrypt(b"salt", 16, 2, 1, 1, provider=p).derive(b"password")
    Argon2id(bytes(8), 16, 1, 1, 8, ad=b"ad", secret=b"s", provider=p).derive(b"password")
    for wrap, unwrap in (
        (keywrap.aes_key_wrap, keywrap.aes_key_unwrap),
        (keywrap.aes_key_wrap_with_padding, keywrap.aes_key_unwrap_with_padding),
    ):
        unwrap(KEY, wrap(KEY, bytes(16), provider=p), provider=p)
    kem = mlkem.MLKEM1024PrivateKey.generate(provider=p)
    kem.decapsulate(kem.public_key().encapsulate()[1])
    signer = mldsa.MLDSA87PrivateKey.generate(provider=p)
    signer.public_key().verify(signer.sign(b"m", b"context"), b"m", b"context")
    mu = bytes(64)
    signer.public_key().verify_mu(signer.sign_mu(mu), mu)


@IGNORE_DSA_WARNING
def test_every_primitive_builds_ops_that_set_exactly_the_contracts_fields():
    engine = TakeAllEngine()
    p = Provider([engine], policy=Policy(min_size={"*": 0}))
    _drive_every_primitive(p)
    seen = set()
    for op in engine.seen:
        key = (op.family, op.kind)
        seen.add(key)
        entry = ops.CONTRACT[key]
        for name in op.FIELDS:
            value = getattr(op, name)
            if name in entry.required:
                assert value is not None, f"{key}: {name} not set"
            elif name not in entry.optional:
                assert value is None, f"{key}: {name} set though the contract has no use for it"
    assert seen == set(ops.CONTRACT)
    answers = p.counters.snapshot()["takeall"]
    assert answers["ecdsa-p256-sign"]["ops"] == 2


#: Cipher modes an engine does not offer at all (cryptodev: CBC, CTR, ECB and GCM only).
NOT_OFFERED = {"cryptodev": {"aes-128-ofb"}}


@pytest.mark.parametrize("engine_name", list(IN_TREE_ENGINES))
@pytest.mark.parametrize("room", [0, 15], ids=["exact", "block-more"])
@pytest.mark.parametrize("alg", ["aes-128-ecb", "aes-128-cbc", "aes-128-ctr", "aes-128-ofb"])
def test_a_cipher_op_with_out_writes_its_result_there_and_returns_the_length(
    engine_name, room, alg
):
    iv = None if alg.endswith("ecb") else bytes(range(16))
    data = bytes(range(48))
    if alg in NOT_OFFERED.get(engine_name, ()):
        with pytest.raises(Unavailable):
            IN_TREE_ENGINES[engine_name]().run(ops.CipherOp(alg, "encrypt", KEY, iv, data))
        return
    expected = IN_TREE_ENGINES[engine_name]().run(ops.CipherOp(alg, "encrypt", KEY, iv, data))
    buf = bytearray(b"\xee" * (48 + room))
    op = ops.CipherOp(alg, "encrypt", KEY, iv, data, memoryview(buf))
    validate.validate_op(op)
    try:
        n = IN_TREE_ENGINES[engine_name]().run(op)
    except Unavailable:
        return
    assert n == 48
    assert bytes(buf[:48]) == expected
    assert buf[48:] == b"\xee" * room


@pytest.mark.parametrize(
    "out, error",
    [
        (bytes(48), TypeError),
        (memoryview(b"x" * 48), TypeError),
        (memoryview(bytearray(47)), ValueError),
        (bytearray(47), ValueError),
        (memoryview(bytearray(96)).cast("H"), TypeError),
        (memoryview(bytearray(96))[::2], TypeError),
    ],
    ids=["bytes", "readonly", "short", "short-bytearray", "wide-items", "strided"],
)
def test_cipher_out_must_be_a_writable_byte_view_with_room(out, error):
    op = ops.CipherOp("aes-128-ecb", "encrypt", KEY, None, bytes(48), out)
    with pytest.raises(error, match="out must"):
        validate.validate_op(op)
