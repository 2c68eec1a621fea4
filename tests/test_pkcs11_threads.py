"""Eight threads on one token: no crash (the module runs with its own OS locking), every answer
right, and the counters exactly the operations issued."""

from __future__ import annotations

import os
import threading
from hashlib import sha256

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import hmac as ref_hmac
from cryptography.hazmat.primitives.asymmetric import ec as ref_ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM as RefAESGCM

from cryptoffload import Policy, Provider, ec
from cryptoffload import hashes as co_hashes
from cryptoffload.aead import AESGCM
from cryptoffload.hmac import HMAC

THREADS = 8
ROUNDS = 40


def test_eight_threads_on_one_token_answer_right_with_exact_counters(softhsm_token):
    provider = Provider([softhsm_token.spec], policy=Policy(min_size={"*": 0}))
    engine = provider.engines[0]
    token_key = engine.generate_key("aes", label=f"threads-{os.urandom(4).hex()}", bits=128)
    ec_key = ec.generate_private_key(ec.SECP256R1(), provider=provider)
    ec_public = ec_key.public_key().to_cryptography()
    wrong: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(n: int) -> None:
        try:
            key = bytes([n]) * 32  # each thread its own caller key, and one shared token key
            gcm, ref = AESGCM(key, provider=provider), RefAESGCM(key)
            shared = AESGCM(token_key, provider=provider)
            start.wait()
            for i in range(ROUNDS):
                nonce, data = os.urandom(12), os.urandom(i * 37)
                sealed = gcm.encrypt(nonce, data, b"t")
                if (
                    sealed != ref.encrypt(nonce, data, b"t")
                    or gcm.decrypt(nonce, sealed, b"t") != data
                ):
                    wrong.append(f"gcm {n}/{i}")
                if shared.decrypt(nonce, shared.encrypt(nonce, data, None), None) != data:
                    wrong.append(f"token gcm {n}/{i}")
                if (
                    co_hashes.digest(data, co_hashes.SHA256(), provider=provider)
                    != sha256(data).digest()
                ):
                    wrong.append(f"sha256 {n}/{i}")
                mac = HMAC(key, co_hashes.SHA256(), provider=provider)
                mac.update(data)
                want = ref_hmac.HMAC(key, hashes.SHA256())
                want.update(data)
                if mac.finalize() != want.finalize():
                    wrong.append(f"hmac {n}/{i}")
                if i % 8 == 0:
                    sig = ec_key.sign(data, ec.ECDSA(hashes.SHA256()))
                    ec_public.verify(sig, data, ref_ec.ECDSA(hashes.SHA256()))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads)
        assert errors == [] and wrong == []
        snap = provider.counters.snapshot()
        cells = snap[engine.name]
        want = {
            "aes-256-gcm": THREADS * ROUNDS * 2,  # encrypt and decrypt
            "aes-128-gcm": THREADS * ROUNDS * 2,
            "sha256": THREADS * ROUNDS,
            "hmac-sha256": THREADS * ROUNDS,
            "ecdsa-p256-sign": THREADS * ((ROUNDS + 7) // 8),
        }
        for alg, n in want.items():
            assert cells[alg]["ops"] == n, (alg, cells[alg])
            assert cells[alg]["faults"] == 0 and cells[alg]["declined"] == {}, (alg, cells[alg])
        assert snap.get("software", {}) == {}
    finally:
        provider.close()
