"""ML-KEM and ML-DSA: each encapsulate, decapsulate, sign and verify one op
(``mlkem-768-encap``, ``mldsa-65-sign``...), engines may take them, answers interoperate with
`cryptography`'s keys, and bad input raises what `cryptography` raises."""

from __future__ import annotations

import pytest
from cryptography.exceptions import AlreadyFinalized, InvalidSignature
from cryptography.hazmat.primitives import serialization as c_serialization
from cryptography.hazmat.primitives.asymmetric import mldsa as c_mldsa
from cryptography.hazmat.primitives.asymmetric import mlkem as c_mlkem
from doubles import FaultingEngine, TakeAllEngine

from cryptoffload import Policy, Provider, mldsa, mlkem, serialization, using
from cryptoffload.core import ops, validate

TAKE_ALL = Policy(min_size={"*": 0})


@pytest.mark.parametrize(
    ("cls", "name"),
    [(mlkem.MLKEM768PrivateKey, "mlkem-768"), (mlkem.MLKEM1024PrivateKey, "mlkem-1024")],
)
def test_mlkem_encapsulate_and_decapsulate_are_one_counted_op_each(cls, name):
    p = Provider([])
    key = cls.generate(provider=p)
    secret, ciphertext = key.public_key().encapsulate()
    assert key.decapsulate(ciphertext) == secret
    assert key.to_cryptography().decapsulate(ciphertext) == secret
    counted = p.counters.snapshot()["software"]
    assert counted == {
        f"{name}-encap": {"ops": 1, "bytes": 0, "declined": {}, "faults": 0},
        f"{name}-decap": {"ops": 1, "bytes": 0, "declined": {}, "faults": 0},
    }


@pytest.mark.parametrize("bits", [44, 65, 87])
def test_mldsa_sign_and_verify_are_one_counted_op_each_and_interoperate(bits):
    p = Provider([])
    ours = getattr(mldsa, f"MLDSA{bits}PrivateKey").generate(provider=p)
    signature = ours.sign(b"message", b"context")
    ours.public_key().verify(signature, b"message", b"context")
    ours.to_cryptography().public_key().verify(signature, b"message", b"context")
    theirs = getattr(c_mldsa, f"MLDSA{bits}PrivateKey").generate()
    wrapped = getattr(mldsa, f"MLDSA{bits}PublicKey")(theirs.public_key(), provider=p)
    wrapped.verify(theirs.sign(b"m"), b"m")
    with pytest.raises(InvalidSignature):
        wrapped.verify(theirs.sign(b"m"), b"other")
    counted = p.counters.snapshot()["software"]
    assert counted[f"mldsa-{bits}-sign"]["ops"] == 1
    assert counted[f"mldsa-{bits}-verify"]["ops"] == 3


def test_mu_is_computed_on_cryptoffloads_shake256_and_signs_as_cryptographys():
    p = Provider([])
    key = mldsa.MLDSA65PrivateKey.generate(provider=p)
    ours = mldsa.MLDSAMuHasher(key.public_key(), b"ctx", provider=p)
    theirs = c_mldsa.MLDSAMuHasher(key.to_cryptography().public_key(), b"ctx")
    for h in (ours, theirs):
        h.update(b"part one, ")
    fork = ours.copy()
    for h in (ours, theirs, fork):
        h.update(b"part two")
    mu = ours.finalize()
    assert mu == theirs.finalize() == fork.finalize()
    with pytest.raises(AlreadyFinalized):
        ours.update(b"more")
    key.public_key().verify(key.sign_mu(mu), b"part one, part two", b"ctx")
    assert p.counters.snapshot()["software"]["shake256"]["ops"] == 3


def test_an_engine_that_claims_ml_kem_gets_it_and_a_fault_leaves_the_same_answer():
    taker = TakeAllEngine(algorithms={"mlkem-768-decap"})
    p = Provider([taker], policy=TAKE_ALL)
    key = mlkem.MLKEM768PrivateKey.generate(provider=p)
    secret, ciphertext = key.public_key().encapsulate()
    assert key.decapsulate(ciphertext) == secret
    assert [(op.family, op.kind) for op in taker.seen] == [("mlkem", "decapsulate")]
    faulty = Provider([FaultingEngine()], policy=TAKE_ALL)
    with using(faulty):
        assert mlkem.MLKEM768PrivateKey(key.to_cryptography()).decapsulate(ciphertext) == secret
    counted = faulty.counters.snapshot()
    assert counted["faulty"]["mlkem-768-decap"]["faults"] == 1
    assert counted["software"]["mlkem-768-decap"]["ops"] == 1


def test_a_failed_ml_dsa_verification_on_an_engine_is_its_answer():
    taker = TakeAllEngine()
    p = Provider([taker], policy=TAKE_ALL)
    key = mldsa.MLDSA44PrivateKey.generate(provider=p)
    with pytest.raises(InvalidSignature):
        key.public_key().verify(key.sign(b"m"), b"n")
    counted = p.counters.snapshot()
    assert counted["takeall"]["mldsa-44-verify"]["ops"] == 1
    assert not counted.get("software")


def test_keys_load_as_cryptoffloads_and_are_cryptographys_kind_of_key():
    key = mlkem.MLKEM1024PrivateKey.generate()
    pem = key.private_bytes(
        c_serialization.Encoding.PEM,
        c_serialization.PrivateFormat.PKCS8,
        c_serialization.NoEncryption(),
    )
    loaded = serialization.load_pem_private_key(pem, None)
    assert isinstance(loaded, mlkem.MLKEM1024PrivateKey)
    assert isinstance(loaded, c_mlkem.MLKEM1024PrivateKey)
    assert loaded.private_bytes_raw() == key.private_bytes_raw()
    assert "MLKEM1024PrivateKey mlkem-1024" in repr(loaded)
    assert key.private_bytes_raw().hex()[:16] not in repr(loaded)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: mlkem.MLKEM768PrivateKey.generate().decapsulate(bytes(100)),
            ValueError,
            "Invalid ML-KEM-768 ciphertext",
        ),
        (
            lambda: mlkem.MLKEM768PrivateKey.generate().decapsulate("text"),
            TypeError,
            "bytes-like",
        ),
        (lambda: mlkem.MLKEM768PrivateKey.from_seed_bytes(bytes(63)), ValueError, "64 bytes"),
        (
            lambda: mldsa.MLDSA44PrivateKey.generate().sign(b"m", bytes(256)),
            ValueError,
            "Context must be at most 255 bytes",
        ),
        (lambda: mldsa.MLDSA44PrivateKey.generate().sign(None), TypeError, "bytes-like"),
        (
            lambda: mldsa.MLDSA44PrivateKey.generate().sign_mu(bytes(63)),
            ValueError,
            "mu must be 64 bytes",
        ),
        (
            lambda: mldsa.MLDSAMuHasher(mldsa.MLDSA44PrivateKey.generate()),
            TypeError,
            "public_key must be an ML-DSA public key.",
        ),
    ],
)
def test_bad_post_quantum_input_raises_what_cryptography_raises(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_validation_refuses_a_key_of_another_parameter_set_than_the_name():
    key = c_mlkem.MLKEM1024PrivateKey.generate()
    op = ops.MlkemOp("mlkem-768-decap", "decapsulate", key, bytes(1088))
    with pytest.raises(TypeError, match="MLKEM768PrivateKey"):
        validate.validate_op(op)
    misnamed = ops.MlkemOp("mlkem-1024-encap", "decapsulate", key, bytes(1568))
    with pytest.raises(ValueError, match="named mlkem-1024-decap"):
        validate.validate_op(misnamed)
    signer = c_mldsa.MLDSA44PrivateKey.generate()
    both = ops.MldsaOp("mldsa-44-sign", "sign", signer, data=b"m", digest=bytes(64))
    with pytest.raises(ValueError, match="one of data"):
        validate.validate_op(both)
