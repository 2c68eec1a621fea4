"""Seeded differential fuzzing through every engine set, and the defects it found."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa as c_rsa
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
from differential import Tally, gather_limit, run_campaign
from doubles import TakeAllEngine
from fuzz_cases import GENERATORS, keys_for, make_case
from sample_keys import RSA_KEY

from cryptoffload import Policy, Provider, modes, rsa
from cryptoffload import engines as registry
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.ciphers import Cipher, algorithms

SEED = 20240516
CASES = 120
SETS = ["takeall", "chaos", "caam:model=t2080", "caam:model=imx7d", "cryptodev:any"]


@pytest.fixture(scope="module")
def campaign() -> dict[str, Tally]:
    with gather_limit(2048):
        tallies, skipped = run_campaign(["software", *SETS], SEED, range(CASES), keep=3)
    assert not skipped, skipped
    return tallies


def test_the_quick_profile_draws_every_family():
    keys = keys_for(SEED)
    assert {make_case(SEED, i, keys).family for i in range(CASES)} == set(GENERATORS)


def test_a_case_is_the_same_on_every_draw():
    keys = keys_for(SEED)
    assert [make_case(SEED, i, keys).text for i in range(30)] == [
        make_case(SEED, i, keys).text for i in range(30)
    ]


@pytest.mark.parametrize("spec", SETS)
def test_every_engine_set_gives_softwares_answers_and_counts_what_it_did(campaign, spec):
    tally = campaign[spec]
    assert tally.cases == CASES
    assert tally.failures == 0, tally.reproducers
    assert tally.answered > CASES // 4  # the engine really took a share of the work


def test_the_software_set_agrees_with_itself(campaign):
    assert campaign["software"].failures == 0, campaign["software"].reproducers


# -- defects found by the campaigns ---------------------------------------------------------------

TAKE_ALL = Policy(min_size={"*": 0})
PUBLIC = RSA_KEY.public_key()


def providers() -> list[Provider]:
    return [Provider([]), Provider([TakeAllEngine()], policy=TAKE_ALL)]


@pytest.mark.parametrize("signature_len", [255, 256])
def test_rsa_verify_of_a_wrong_length_prehashed_digest_is_value_error_on_every_path(signature_len):
    """Found by seed 1 case 382: the software path checked the signature's length first and
    raised InvalidSignature; `cryptography` and the engine path check the digest first."""
    algorithm = Prehashed(c_hashes.SHA256())
    with pytest.raises(ValueError, match="digest size"):
        PUBLIC.verify(bytes(signature_len), bytes(56), padding.PKCS1v15(), algorithm)
    for provider in providers():
        key = rsa.RSAPublicKey(PUBLIC, provider=provider)
        with pytest.raises(ValueError):
            key.verify(bytes(signature_len), bytes(56), padding.PKCS1v15(), algorithm)


SMALL = c_rsa.generate_private_key(65537, 1024)
N = SMALL.public_key().public_numbers().n
OAEP_512 = padding.OAEP(padding.MGF1(c_hashes.SHA1()), c_hashes.SHA512(), None)
MISFITS: dict[str, Any] = {
    "pss-salt-too-long": lambda key: key.sign(
        b"m", padding.PSS(padding.MGF1(c_hashes.SHA256()), 100), c_hashes.SHA512()
    ),
    "pss-auto-when-signing": lambda key: key.sign(
        b"m", padding.PSS(padding.MGF1(c_hashes.SHA256()), padding.PSS.AUTO), c_hashes.SHA256()
    ),
    "oaep-no-room": lambda key: key.public_key().encrypt(b"", OAEP_512),
    "pkcs1v15-message-too-long": lambda key: key.public_key().encrypt(
        bytes(118), padding.PKCS1v15()
    ),
    "ciphertext-one-byte-short": lambda key: key.decrypt(bytes(127), padding.PKCS1v15()),
    "ciphertext-not-below-n": lambda key: key.decrypt(N.to_bytes(128, "big"), OAEP_512),
}


@pytest.mark.parametrize("case", list(MISFITS))
def test_rsa_inputs_the_key_has_no_room_for_are_refused_before_any_engine(case):
    """Found by seed 1 cases 52, 217 and seed 2 case 1070: these reached the engines, whose
    padding code refused them with a ValueError counted as a fault; OpenSSL refuses them too."""
    with pytest.raises(ValueError):
        MISFITS[case](SMALL)
    engine = TakeAllEngine()
    provider = Provider([engine], policy=TAKE_ALL)
    with pytest.raises(ValueError):
        MISFITS[case](rsa.RSAPrivateKey(SMALL, provider=provider))
    assert engine.seen == []
    snapshot = provider.counters.snapshot()
    assert all(cell["faults"] == 0 for algs in snapshot.values() for cell in algs.values())
    with pytest.raises(ValueError):
        MISFITS[case](rsa.RSAPrivateKey(SMALL, provider=Provider([])))


def test_rsa_inputs_that_just_fit_still_reach_the_engine():
    engine = TakeAllEngine()
    provider = Provider([engine], policy=TAKE_ALL)
    key = rsa.RSAPrivateKey(SMALL, provider=provider)
    sealed = key.public_key().encrypt(bytes(117), padding.PKCS1v15())  # k - 11: the most
    assert SMALL.decrypt(sealed, padding.PKCS1v15()) == bytes(117)
    pss = padding.PSS(padding.MGF1(c_hashes.SHA256()), 128 - 64 - 2)  # em_len - hLen - 2
    SMALL.public_key().verify(key.sign(b"m", pss, c_hashes.SHA512()), b"m", pss, c_hashes.SHA512())
    oaep = padding.OAEP(padding.MGF1(c_hashes.SHA1()), c_hashes.SHA256(), None)
    assert key.decrypt(SMALL.public_key().encrypt(bytes(62), oaep), oaep) == bytes(62)
    assert [op.kind for op in engine.seen] == ["encrypt", "sign", "decrypt"]


def ops_by_alg(provider: Provider) -> dict[str, int]:
    return {
        alg: cell["ops"]
        for algs in provider.counters.snapshot().values()
        for alg, cell in algs.items()
        if cell["ops"]
    }


UPDATES = {
    "ecb-partial-blocks": (modes.ECB(), [11, 2, 3, 16]),
    "cbc-empty-and-partial": (modes.CBC(bytes(16)), [0, 5, 27, 0]),
    "ofb-empty-first": (modes.OFB(bytes(16)), [0, 41]),
    "ctr-empty-after-partial": (modes.CTR(bytes(16)), [10, 0, 0, 7]),
}


@pytest.mark.parametrize("case", list(UPDATES))
@pytest.mark.parametrize("into", [False, True])
def test_a_cipher_context_counts_the_same_ops_on_the_software_and_the_engine_path(case, into):
    """Found by seed 4 cases 13, 31, 57: the software path counted every update, the engine
    path only those that sent something; and a stream mode re-sent its held partial block for
    an empty update."""
    mode, sizes = UPDATES[case]
    counts = []
    for engine in (None, TakeAllEngine()):
        provider = Provider([engine] if engine else [], policy=TAKE_ALL)
        ctx = Cipher(algorithms.AES(bytes(16)), mode, provider=provider).encryptor()
        for n in sizes:
            if into:
                buf = bytearray(n + 15)
                ctx.update_into(bytes(n), buf)
            else:
                ctx.update(bytes(n))
        ctx.finalize()
        counts.append(ops_by_alg(provider))
        if engine is not None:
            assert all(len(op.data) for op in engine.seen)  # no op sent for nothing new
            assert len(engine.seen) == sum(counts[-1].values())
    assert counts[0] == counts[1]


def short_decryptions(provider: Provider) -> list[Any]:
    """Decryptions of 3 bytes (shorter than any tag) by every AEAD the API has, plain and _into."""
    from cryptoffload import aead

    calls: list[Any] = []
    for make, nonce in (
        (lambda: AESGCM(bytes(16), provider=provider), bytes(12)),
        (lambda: AESCCM(bytes(16), 8, provider=provider), bytes(13)),
    ):
        calls.append(lambda make=make, nonce=nonce: make().decrypt(nonce, bytes(3), None))
        calls.append(
            lambda make=make, nonce=nonce: make().decrypt_into(nonce, bytes(3), None, bytearray(0))
        )
    if hasattr(aead, "AESSIV"):
        siv = aead.AESSIV(bytes(32), provider=provider)
        calls.append(lambda: siv.decrypt(bytes(3), None))
        calls.append(lambda: siv.decrypt_into(bytes(3), None, bytearray(0)))
    return calls


def test_aead_decrypt_of_data_shorter_than_its_tag_is_refused_uncounted_on_every_path():
    """Found by seed 4 cases 101, 592 (and seed 11 case 13 for AES-SIV): the software path
    counted it, the engine path (where validation refuses it) did not."""
    for provider in providers():
        for call in short_decryptions(provider):
            with pytest.raises(InvalidTag):
                call()
        assert ops_by_alg(provider) == {}


def test_rsa_decrypt_of_a_ciphertext_not_of_this_key_is_refused_uncounted_on_every_path():
    """Found by seed 4 cases 60, 172: after validation refused a ciphertext of the wrong length
    before the engines, the software path still counted it."""
    for provider in providers():
        key = rsa.RSAPrivateKey(SMALL, provider=provider)
        for ciphertext in (bytes(127), N.to_bytes(128, "big")):
            with pytest.raises(ValueError):
                key.decrypt(ciphertext, padding.PKCS1v15())
        assert ops_by_alg(provider) == {}


class FlippingEngine(TakeAllEngine):
    """Gets every AES-GCM encryption wrong by one bit: what the campaign must catch."""

    def run(self, op: Any) -> Any:
        result = super().run(op)
        if op.alg.endswith("-gcm") and op.kind == "encrypt":
            return bytes([result[0] ^ 1]) + result[1:]
        return result


def test_the_campaign_catches_an_engine_that_gets_answers_wrong(monkeypatch):
    monkeypatch.setitem(registry.FACTORIES, "flipper", lambda arg: FlippingEngine("flipper"))
    tallies, _ = run_campaign(["flipper"], SEED, range(60), keep=3, families=["aead"])
    tally = tallies["flipper"]
    assert tally.wrong > 0 and tally.mismatches + tally.disagreements > 0
    assert any("AESGCM" in line for line in tally.reproducers)
