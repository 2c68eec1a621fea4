"""The CAAM engine on the model, end to end through a provider: offload shown by the provider's
counters and the engine's own figures (and absent without the engine), the fault paths (full and
stalled rings, error statuses, an RNG that will not come up, a ring reset mid-run), threads
sharing one ring, batches, altered tags, validation before the engine, a vector subset on the
t1040, and the commands (`engines`, `bench`, `selftest`)."""

from __future__ import annotations

import hashlib
import hmac as std_hmac
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from caam_spies import freed_contents
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes as ref_hashes
from cryptography.hazmat.primitives.asymmetric import ec as ref_ec
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers import Cipher as RefCipher
from cryptography.hazmat.primitives.ciphers.aead import AESGCM as RefGCM
from sample_keys import DH_KEY, DH_PEER, EC_KEY, EC_PEER, RSA_KEY
from vectors.loaders import (
    aes_vectors,
    ecdh_kas_vectors,
    ecdsa_sigver_vectors,
    gcm_vectors,
    hash_class,
    hash_vectors,
    hmac_vectors,
    rsa_sigver_vectors,
)

from cryptoffload import Policy, Provider, dh, ec, hashes, hmac, modes, rsa
from cryptoffload import engines as registry
from cryptoffload.aead import AESGCM
from cryptoffload.caam import regs, status
from cryptoffload.caam.jr.transport import ModelTransport
from cryptoffload.caam.model import CaamModel
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.drbg import Drbg
from cryptoffload.engines.caam import CaamEngine
from cryptoffload.tools import cli

TAKE_ALL = Policy(min_size={"*": 0})
PARTS = ["t2080", "t1040", "imx7d"]
PSS = padding.PSS(padding.MGF1(ref_hashes.SHA256()), padding.PSS.DIGEST_LENGTH)
_EMPTY = {"ops": 0, "bytes": 0, "declined": {}, "faults": 0}


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[ModelTransport]:
    """The model transports the `caam:model=...` specs open, in order (to reach each model)."""
    opened: list[ModelTransport] = []
    for_part = ModelTransport.for_part

    def record(part: str, seed: bytes | None = None) -> ModelTransport:
        opened.append(for_part(part, seed=seed))
        return opened[-1]

    monkeypatch.setattr(ModelTransport, "for_part", staticmethod(record))
    return opened


def caam(spec: str = "caam:model=t2080") -> tuple[Provider, CaamEngine]:
    """A provider with the engine of ``spec`` (taking every size) in front of software."""
    provider = Provider([spec], policy=TAKE_ALL)
    (engine,) = provider.engines[:-1]
    assert isinstance(engine, CaamEngine), provider.unavailable
    return provider, engine


def on_model(model: CaamModel, transport: type[ModelTransport] = ModelTransport) -> Provider:
    """A provider with a CAAM engine over ``model`` (or a transport bent around it)."""
    engine = CaamEngine(f"caam:model={model.part.name}", lambda: transport(model))
    return Provider([engine], policy=TAKE_ALL)


def cell(provider: Provider, engine: str, alg: str) -> dict[str, Any]:
    return provider.counters.snapshot().get(engine, {}).get(alg, _EMPTY)


def offloaded(
    provider: Provider, performed: dict[str, int], software: dict[str, int] | None = None
) -> None:
    """The engine did exactly ``performed`` (ops per algorithm), with no decline or fault, and
    software nothing (but its own ``software`` ops, done without asking an engine)."""
    name = provider.engines[0].name
    snap = provider.counters.snapshot()
    assert {a for a, c in snap.get(name, {}).items() if c != _EMPTY} == set(performed), snap
    for alg, n in performed.items():
        assert cell(provider, name, alg) | {"bytes": 0} == _EMPTY | {"ops": n}, (alg, snap)
    done = {alg: c["ops"] for alg, c in snap["software"].items() if c["ops"]}
    assert done == (software or {}), snap


def gcm(provider: Provider, key: bytes = bytes(range(16))) -> tuple[AESGCM, RefGCM]:
    return AESGCM(key, provider=provider), RefGCM(key)


# ---------------------------------------------------------------------- (a) negative control

#: What ``workload`` does, by algorithm; the DRBG's own generation is software's in any case
#: (the engine's TRNG only seeds it), counted apart.
WORKLOAD = {
    "aes-128-gcm": 2,
    "aes-128-cbc": 1,
    "sha256": 1,
    "hmac-sha256": 1,
    "rsa-2048-private": 1,
    "rsa-2048-public": 1,
    "ecdsa-p256-sign": 1,
    "ecdsa-p256-verify": 1,
    "ecdh-p256": 1,
    "ffdhe2048": 1,
    "drbg": 1,
}


def workload(provider: Provider) -> None:
    """One fixed run of every family, each answer checked against `cryptography`."""
    key, nonce, msg, aad = bytes(range(16)), bytes(12), b"fixed workload " * 7, b"header"
    ours, ref = gcm(provider, key)
    sealed = ours.encrypt(nonce, msg, aad)
    assert sealed == ref.encrypt(nonce, msg, aad)
    assert ours.decrypt(nonce, sealed, aad) == msg
    iv, block = bytes(range(16, 32)), msg[:96]
    enc = Cipher(algorithms.AES(key), modes.CBC(iv), provider=provider).encryptor()
    want = RefCipher(algorithms.AES(key), modes.CBC(iv)).encryptor().update(block)
    assert enc.update(block) + enc.finalize() == want
    assert hashes.digest(msg, hashes.SHA256(), provider=provider) == hashlib.sha256(msg).digest()
    mac = hmac.HMAC(key, hashes.SHA256(), provider=provider)
    mac.update(msg)
    assert mac.finalize() == std_hmac.new(key, msg, "sha256").digest()
    private = rsa.RSAPrivateKey(RSA_KEY, provider=provider)
    signature = private.sign(msg, PSS, ref_hashes.SHA256())
    RSA_KEY.public_key().verify(signature, msg, PSS, ref_hashes.SHA256())
    private.public_key().verify(signature, msg, PSS, ref_hashes.SHA256())
    ours_ec = ec.EllipticCurvePrivateKey(EC_KEY, provider=provider)
    signature = ours_ec.sign(msg, ec.ECDSA(ref_hashes.SHA256()))
    EC_KEY.public_key().verify(signature, msg, ec.ECDSA(ref_hashes.SHA256()))
    ours_ec.public_key().verify(signature, msg, ec.ECDSA(ref_hashes.SHA256()))
    assert ours_ec.exchange(ec.ECDH(), EC_PEER) == EC_KEY.exchange(ec.ECDH(), EC_PEER)
    assert dh.DHPrivateKey(DH_KEY, provider=provider).exchange(DH_PEER) == DH_KEY.exchange(DH_PEER)
    assert len(Drbg(provider).random_bytes(32)) == 32


def test_the_workload_runs_on_the_engine_and_its_figures_show_it(made):
    provider, engine = caam()
    model = made[0].model
    before, jobs_before = engine.figures, model.counters.jobs
    workload(provider)
    performed = dict(WORKLOAD)
    offloaded(provider, performed, software={"drbg": 1})  # the generation; the seed: the engine
    after = engine.figures
    jobs = after["jobs"] - before["jobs"]
    assert jobs >= sum(performed.values()) > 0
    assert model.counters.jobs - jobs_before == jobs  # every job reached the block
    assert after["errors"] == {} and after["in_flight"] == 0
    assert after["bytes_in"] > before["bytes_in"] and after["bytes_out"] > before["bytes_out"]


def test_without_the_engine_the_same_run_makes_no_caam_job(made):
    """The negative control: a CAAM engine is there, probed, but not in the provider."""
    bystander = registry.from_spec("caam:model=t2080")
    assert bystander.probe().available
    model = made[0].model
    figures, jobs = bystander.figures, model.counters.jobs
    assert figures["jobs"] == figures["rng_instantiations"] == 1  # the probe's RNG bring-up
    provider = Provider([], policy=TAKE_ALL)
    workload(provider)
    snap = provider.counters.snapshot()
    assert list(snap) == ["software"]
    assert {alg: c["ops"] for alg, c in snap["software"].items()} == WORKLOAD | {"drbg": 2}
    assert bystander.figures == figures and model.counters.jobs == jobs
    bystander.close()


# ---------------------------------------------------------------------- (b) no SEC on the part


def test_a_part_without_the_sec_is_unavailable_and_no_register_is_read(monkeypatch):
    touched: list[tuple[str, int]] = []
    read32, write32 = CaamModel.read32, CaamModel.write32

    def spy_read(self: CaamModel, offset: int) -> int:
        touched.append(("read", offset))
        return read32(self, offset)

    def spy_write(self: CaamModel, offset: int, value: int) -> None:
        touched.append(("write", offset))
        write32(self, offset, value)

    monkeypatch.setattr(CaamModel, "read32", spy_read)
    monkeypatch.setattr(CaamModel, "write32", spy_write)
    provider = Provider(["caam:model=t2080-nosec"], policy=TAKE_ALL)
    reason = provider.unavailable["caam:model=t2080-nosec"]
    assert "no SEC block" in reason and "lacks the E bit" in reason
    assert [e.name for e in provider.engines] == ["software"]
    assert touched == []
    gcm(provider)[0].encrypt(bytes(12), b"software", None)
    assert list(provider.counters.snapshot()) == ["software"]
    # Reading the block of that part at all would have been an error: the spy is live.
    with pytest.raises(RuntimeError, match="no SEC"):
        CaamModel("t2080-nosec").read32(regs.CCBVID)
    assert touched == [("read", regs.CCBVID)]


def test_a_board_spec_reaches_the_board_transport_and_its_failure_is_a_reason(monkeypatch):
    """The board form's options as boards.open_board takes them; what it cannot open (here a
    stand-in that refuses) makes the engine unavailable with that reason, the probe not raising."""
    from cryptoffload.caam.jr import boards

    asked: list[dict[str, Any]] = []

    def refuse(**kwargs: Any) -> Any:
        asked.append(kwargs)
        raise boards.BoardError("/dev/mem: permission denied: run as root")

    monkeypatch.setattr(boards, "open_board", refuse)
    spec = "caam:base=0xffe300000,pool=0x7f000000:16m,svr=0x85300011,timeout=0.5"
    provider = Provider([spec])
    name = "caam:base=0xffe300000,pool=0x7f000000:16m,svr=0x85300011"
    assert provider.unavailable == {name: "/dev/mem: permission denied: run as root"}
    assert asked == [{"base": 0xFFE300000, "pool": (0x7F000000, 16 << 20), "svr": 0x85300011}]
    Provider(["caam:uio=0,udmabuf=1"])
    assert asked[-1] == {"uio": 0, "udmabuf": 1}


def cells(*values: int) -> bytes:
    return b"".join(v.to_bytes(4, "big") for v in values)


SEC = b"fsl,sec-v5.2\0fsl,sec-v5.0\0fsl,sec-v4.0\0"
#: The nodes on the way to the block, as Linux's t208xrdb.dtsi, t2081si-post.dtsi and
#: qoriq-sec5.2-0.dtsi (T2080RDB) and imx7s.dtsi describe them.
DEVICE_TREES = {
    "t2080": {
        "": {"#address-cells": cells(2), "#size-cells": cells(2)},
        "soc@ffe000000": {
            "#address-cells": cells(1),
            "#size-cells": cells(1),
            "ranges": cells(0, 0xF, 0xFE000000, 0x1000000),
        },
        "soc@ffe000000/crypto@300000": {"compatible": SEC, "reg": cells(0x300000, 0x10000)},
        "soc@ffe000000/crypto@300000/jr@1000": {
            "compatible": b"fsl,sec-v5.2-job-ring\0fsl,sec-v4.0-job-ring\0",
            "reg": cells(0x1000, 0x1000),
        },
    },
    "imx7d": {
        "": {"#address-cells": cells(1), "#size-cells": cells(1)},
        "soc": {"#address-cells": cells(1), "#size-cells": cells(1), "ranges": b""},
        "soc/bus@30800000": {"reg": cells(0x30800000, 0x400000), "ranges": b""},
        "soc/bus@30800000/crypto@30900000": {
            "compatible": b"fsl,sec-v4.0\0",
            "reg": cells(0x30900000, 0x40000),
        },
    },
}


@pytest.mark.parametrize(
    ("tree", "base"), [("t2080", 0xFFE300000), ("imx7d", 0x30900000), ("no-ranges", None)]
)
def test_the_base_comes_from_the_device_tree_through_the_buses_ranges(
    monkeypatch, tmp_path, tree, base
):
    from cryptoffload.caam.jr import boards
    from cryptoffload.engines import caam as caam_engine

    nodes = DEVICE_TREES["imx7d" if tree == "no-ranges" else tree]
    for path, props in nodes.items():
        (tmp_path / path).mkdir(parents=True, exist_ok=True)
        for name, value in props.items():
            if not (tree == "no-ranges" and path == "soc/bus@30800000" and name == "ranges"):
                (tmp_path / path / name).write_bytes(value)
    monkeypatch.setattr(caam_engine, "DEVICE_TREE", tmp_path)
    asked: list[dict[str, Any]] = []

    def refuse(**kwargs: Any) -> Any:
        asked.append(kwargs)
        raise boards.BoardError("stand-in")

    monkeypatch.setattr(boards, "open_board", refuse)
    provider = Provider(["caam:udmabuf=0"])
    if base is None:
        assert "bus@30800000 has no ranges" in provider.unavailable["caam:udmabuf=0"]
        assert asked == []
    else:
        assert asked == [{"base": base, "udmabuf": 0}]


# ---------------------------------------------------------------------- (c) fault paths


def test_a_full_ring_is_a_busy_decline_and_software_answers(made):
    provider, engine = caam()
    model = made[0].model
    ours, ref = gcm(provider)
    ours.encrypt(bytes(12), b"warm up", None)  # the shared descriptor is cached now
    before, jobs = engine.figures, model.counters.jobs
    model.make_ring_full()
    # The driver reads IRSAR again once the slots it last read are used (as Linux keeps
    # inpring_avail): they are, as far as it knows.
    engine._driver._ring.avail = 0
    assert ours.encrypt(bytes(12), b"no room", None) == ref.encrypt(bytes(12), b"no room", None)
    c = cell(provider, engine.name, "aes-128-gcm")
    assert c["ops"] == 1 and c["declined"] == {"busy": 1} and c["faults"] == 0
    assert cell(provider, "software", "aes-128-gcm")["ops"] == 1
    after = engine.figures
    assert after["ring_full"] == 1 and after["jobs"] == before["jobs"]
    assert model.counters.jobs == jobs  # nothing reached the block
    assert after["in_flight"] == 0 and after["dma_in_use"] == before["dma_in_use"]
    model.make_ring_full(False)
    ours.encrypt(bytes(12), b"room again", None)
    assert cell(provider, engine.name, "aes-128-gcm")["ops"] == 2


def test_a_stalled_ring_is_a_fault_after_the_timeout_and_serves_again(made):
    provider, engine = caam("caam:model=t2080,timeout=0.2")
    assert engine.name == "caam:model=t2080"
    model = made[0].model
    ours, ref = gcm(provider)
    ours.encrypt(bytes(12), b"warm up", None)
    before = engine.figures
    model.stall()
    start = time.monotonic()
    assert ours.encrypt(bytes(12), b"stalled", None) == ref.encrypt(bytes(12), b"stalled", None)
    took = time.monotonic() - start
    assert 0.2 <= took < 1.5  # the option's timeout, not the default 2 s, and no hang
    c = cell(provider, engine.name, "aes-128-gcm")
    assert c["faults"] == 1 and c["declined"] == {} and c["ops"] == 1
    assert cell(provider, "software", "aes-128-gcm")["ops"] == 1
    after = engine.figures
    assert after["timeouts"] == 1 and after["ring_resets"] == 1
    assert after["errors"] == {f"0x{status.deco(status.DECO_JRRESET):08x}": 1}
    assert after["in_flight"] == 0 and after["dma_in_use"] == before["dma_in_use"]
    assert model.counters.flushed == 1
    model.unstall()
    ours.encrypt(bytes(12), b"again", None)
    assert cell(provider, engine.name, "aes-128-gcm")["ops"] == 2


ERROR_STATUSES = {
    "ccb-aes-hardware": status.ccb(status.CHA_AES, status.ERR_HARDWARE, 2),
    "deco-dma": status.deco(status.DECO_DMA, 3),
}


@pytest.mark.parametrize("word", list(ERROR_STATUSES.values()), ids=list(ERROR_STATUSES))
def test_an_error_status_is_a_fault_and_what_the_engine_wrote_is_wiped(made, monkeypatch, word):
    provider, engine = caam()
    transport = made[0]
    ours, ref = gcm(provider)
    nonce, secret = bytes(12), b"plaintext the engine wrote " * 4
    sealed = ref.encrypt(nonce, secret, b"")
    ours.decrypt(nonce, sealed, b"")  # warm up
    before = engine.figures
    freed = freed_contents(monkeypatch, transport)
    transport.model.force_status(word)
    assert ours.decrypt(nonce, sealed, b"") == secret  # software's answer
    c = cell(provider, engine.name, "aes-128-gcm")
    assert c["faults"] == 1 and c["ops"] == 1
    assert cell(provider, "software", "aes-128-gcm")["ops"] == 1
    assert freed and not any(secret[:16] in region for region in freed)
    after = engine.figures
    assert after["errors"] == {f"0x{word:08x}": 1} and after["ring_resets"] == 0
    assert after["in_flight"] == 0 and after["dma_in_use"] == before["dma_in_use"]


class NoEntropy(ModelTransport):
    """A block whose RNG4 never instantiates: every job added arms the model to fail the next
    instantiation (a TRNG that never gathers enough entropy)."""

    def __init__(self, model: CaamModel) -> None:
        super().__init__(model)
        add, irjar = self.write32, regs.jr_base(0) + regs.IRJAR

        def write32(offset: int, value: int) -> None:
            if offset == irjar:
                model.fail_rng_instantiation()
            add(offset, value)

        self.write32 = write32


def test_an_rng_that_fails_once_at_probe_is_retried_and_claimed():
    model = CaamModel("t2080", seed=b"engine rng")
    model.fail_rng_instantiation()
    provider = on_model(model)
    caps = provider.capabilities["caam:model=t2080"]
    assert caps.detail["RNG"] == "instantiated"
    assert {"drbg", "ecdsa-p256-sign"} <= caps.algorithms
    figures = provider.engines[0].figures
    rng_error = status.ccb(status.CHA_RNG, status.ERR_RNG_INSTANTIATE, 1)
    assert figures["rng_instantiations"] == 1 and figures["errors"] == {f"0x{rng_error:08x}": 1}


def test_an_rng_that_never_comes_up_leaves_drbg_and_signing_to_software():
    provider = on_model(CaamModel("t2080", seed=b"engine rng"), NoEntropy)
    name = "caam:model=t2080"
    caps = provider.capabilities[name]
    assert caps.available and "not instantiated after 4 attempts" in caps.detail["RNG"]
    assert caps.detail["RNG"].startswith("not usable: ")
    assert "drbg" not in caps.algorithms and "ecdsa-p256-sign" not in caps.algorithms
    assert {"ecdsa-p256-verify", "aes-128-gcm", "rsa-2048-private"} <= caps.algorithms
    engine = provider.engines[0]
    jobs = engine.figures["jobs"]
    Drbg(provider).random_bytes(16)
    key = ec.EllipticCurvePrivateKey(EC_KEY, provider=provider)
    signature = key.sign(b"signed in software", ec.ECDSA(ref_hashes.SHA256()))
    key.public_key().verify(signature, b"signed in software", ec.ECDSA(ref_hashes.SHA256()))
    assert cell(provider, name, "drbg") == cell(provider, name, "ecdsa-p256-sign") == _EMPTY
    assert cell(provider, "software", "drbg")["ops"] == 2  # the seed and the generation
    assert cell(provider, "software", "ecdsa-p256-sign")["ops"] == 1
    assert cell(provider, name, "ecdsa-p256-verify")["ops"] == 1
    assert engine.figures["jobs"] == jobs + 1  # the verify: no RNG attempt on the way


def test_a_ring_reset_mid_run_fails_every_job_in_flight_to_software(made):
    provider, engine = caam()
    model = made[0].model
    ours, ref = gcm(provider)
    ours.encrypt(bytes(12), b"warm up", None)
    model.stall()
    n = 8
    answers: dict[int, bool] = {}

    def work(i: int) -> None:
        nonce, msg = os.urandom(12), os.urandom(100 + i)
        answers[i] = ours.encrypt(nonce, msg, None) == ref.encrypt(nonce, msg, None)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 5
    while engine.figures["in_flight"] < n and time.monotonic() < deadline:
        time.sleep(0.001)
    assert engine.figures["in_flight"] == n
    model.write32(regs.jr_base(0) + regs.IRJAR, 100)  # more jobs than slots: a ring error
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    assert answers == dict.fromkeys(range(n), True)
    c = cell(provider, engine.name, "aes-128-gcm")
    assert c["ops"] == 1 and c["faults"] == n
    assert cell(provider, "software", "aes-128-gcm")["ops"] == n
    figures = engine.figures
    assert figures["ring_errors"] == figures["ring_resets"] == 1 and figures["in_flight"] == 0
    assert figures["errors"] == {f"0x{status.deco(status.DECO_JRRESET):08x}": n}
    model.unstall()
    ours.encrypt(bytes(12), b"after the reset", None)
    assert cell(provider, engine.name, "aes-128-gcm")["ops"] == 2


# ---------------------------------------------------------------------- (d) threads


def test_threads_sharing_one_engine_get_right_answers_and_exact_counters():
    provider, engine = caam()
    key = bytes(range(32))
    ours, ref = gcm(provider, key)
    verifier = ec.EllipticCurvePrivateKey(EC_KEY, provider=provider).public_key()
    signed = EC_KEY.sign(b"threads", ec.ECDSA(ref_hashes.SHA256()))
    n_threads, rounds = 8, 10
    jobs = engine.figures["jobs"]
    wrong: list[tuple[int, int, str]] = []

    def work(k: int) -> None:
        try:
            for i in range(rounds):
                nonce, msg = os.urandom(12), os.urandom(1 + 37 * k + i)
                sealed = ours.encrypt(nonce, msg, b"%d" % k)
                if sealed != ref.encrypt(nonce, msg, b"%d" % k):
                    wrong.append((k, i, "gcm encrypt"))
                if ours.decrypt(nonce, sealed, b"%d" % k) != msg:
                    wrong.append((k, i, "gcm decrypt"))
                if hashes.digest(msg, hashes.SHA256(), provider=provider) != (
                    hashlib.sha256(msg).digest()
                ):
                    wrong.append((k, i, "sha256"))
                mac = hmac.HMAC(key, hashes.SHA256(), provider=provider)
                mac.update(msg)
                if mac.finalize() != std_hmac.new(key, msg, "sha256").digest():
                    wrong.append((k, i, "hmac"))
                verifier.verify(signed, b"threads", ec.ECDSA(ref_hashes.SHA256()))
        except Exception as exc:  # reported below with the others
            wrong.append((k, -1, repr(exc)))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not wrong, wrong[:5]
    each = n_threads * rounds
    performed = {
        "aes-256-gcm": 2 * each,
        "sha256": each,
        "hmac-sha256": each,
        "ecdsa-p256-verify": each,
    }
    offloaded(provider, performed)
    figures = engine.figures
    assert figures["jobs"] - jobs == sum(performed.values())  # one job each
    assert figures["errors"] == {} and figures["in_flight"] == 0 and figures["ring_resets"] == 0


# ---------------------------------------------------------------------- (e) batches


def test_a_batch_goes_to_the_ring_in_one_call_with_an_answer_per_item(monkeypatch):
    provider, engine = caam()
    ours, ref = gcm(provider)
    calls: list[int] = []
    run_batch = engine.run_batch

    def spy(ops: list[Any]) -> list[Any]:
        calls.append(len(ops))
        return run_batch(ops)

    monkeypatch.setattr(engine, "run_batch", spy)
    plain = [os.urandom(20 + i) for i in range(8)]
    items = []
    for i, msg in enumerate(plain):
        nonce = os.urandom(16 if i == 7 else 12)  # the last nonce: not what the engine takes
        sealed = bytearray(ref.encrypt(nonce, msg, b"batch"))
        if i in (2, 5):
            sealed[-1 if i == 2 else 0] ^= 1  # an altered tag, an altered ciphertext
        items.append((nonce, bytes(sealed), b"batch"))
    jobs, max_before = engine.figures["jobs"], engine.figures["max_in_flight"]
    out = ours.decrypt_many(items)
    assert [isinstance(o, InvalidTag) for o in out] == [i in (2, 5) for i in range(8)]
    assert [o for i, o in enumerate(out) if i not in (2, 5)] == [
        msg for i, msg in enumerate(plain) if i not in (2, 5)
    ]
    assert calls == [8]  # the whole batch in one call
    c = cell(provider, engine.name, "aes-128-gcm")
    assert c["ops"] == 7 and c["declined"] == {"unsupported": 1} and c["faults"] == 0
    assert cell(provider, "software", "aes-128-gcm")["ops"] == 1
    figures = engine.figures
    assert figures["jobs"] - jobs == 7
    assert figures["max_in_flight"] >= 7 > max_before  # on the ring together
    assert figures["in_flight"] == 0


# ---------------------------------------------------------------------- (f) altered tags


@pytest.mark.parametrize("part", PARTS)
def test_an_altered_gcm_tag_is_invalid_tag_and_no_plaintext_on_every_part(made, monkeypatch, part):
    provider, engine = caam(f"caam:model={part}")
    ours, ref = gcm(provider)
    nonce, secret = bytes(12), b"never released " * 8
    sealed = bytearray(ref.encrypt(nonce, secret, b"aad"))
    freed = freed_contents(monkeypatch, made[0])
    for where in (-1, 0):  # the tag, then the ciphertext
        altered = bytearray(sealed)
        altered[where] ^= 0x80
        with pytest.raises(InvalidTag) as err:
            ours.decrypt(nonce, bytes(altered), b"aad")
        assert secret[:16] not in repr(err.value).encode()
    assert freed and not any(secret[:16] in region for region in freed)
    offloaded(provider, {"aes-128-gcm": 2})  # the engine's answers, not software's
    icv = status.ccb(status.CHA_AES, status.ERR_ICVCHK)
    assert [int(w, 16) & 0xF000_00FF for w in engine.figures["errors"]] == [icv]


# ---------------------------------------------------------------------- (g) validation first


BAD_INPUTS: dict[str, tuple[type[Exception], Callable[[Provider], Any]]] = {
    "gcm-nonce-4": (ValueError, lambda p: gcm(p)[0].encrypt(bytes(4), b"x", None)),
    "gcm-data-not-bytes": (TypeError, lambda p: gcm(p)[0].encrypt(bytes(12), "text", None)),
    "cbc-iv-8": (
        ValueError,
        lambda p: Cipher(algorithms.AES(bytes(16)), modes.CBC(bytes(8)), provider=p).encryptor(),
    ),
    "hash-not-bytes": (TypeError, lambda p: hashes.digest("text", hashes.SHA256(), provider=p)),
    "rsa-raw-n": (
        ValueError,
        lambda p: rsa.RSAPrivateKey(RSA_KEY, provider=p).raw_private(
            RSA_KEY.public_key().public_numbers().n
        ),
    ),
    "ecdh-p384-peer": (
        ValueError,
        lambda p: ec.EllipticCurvePrivateKey(EC_KEY, provider=p).exchange(
            ec.ECDH(), ref_ec.generate_private_key(ref_ec.SECP384R1()).public_key()
        ),
    ),
    "dh-peer-1": (
        ValueError,
        lambda p: dh.DHPrivateKey(DH_KEY, provider=p).exchange(
            dh.DHPublicKey.from_public_value("ffdhe2048", 1)
        ),
    ),
    "drbg-negative": (ValueError, lambda p: Drbg(p).random_bytes(-1)),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_refused_before_the_engine_sees_it(made, case):
    provider, engine = caam()
    kind, call = BAD_INPUTS[case]
    figures, jobs = engine.figures, made[0].model.counters.jobs
    with pytest.raises(kind):
        call(provider)
    assert engine.figures == figures and made[0].model.counters.jobs == jobs
    snap = provider.counters.snapshot()
    assert all(c == _EMPTY for algs in snap.values() for c in algs.values()), snap


# ---------------------------------------------------------------------- (h) vectors on the t1040


@pytest.fixture(scope="module")
def t1040() -> Iterator[tuple[Provider, CaamEngine]]:
    provider, engine = caam("caam:model=t1040")
    yield provider, engine
    provider.close()


def fresh_counts(provider: Provider) -> Callable[[], dict[str, dict[str, int]]]:
    """Ops per engine and algorithm since now: what one test of the shared provider did."""
    before = provider.counters.snapshot()

    def since() -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for engine, algs in provider.counters.snapshot().items():
            for alg, c in algs.items():
                old = before.get(engine, {}).get(alg, _EMPTY)
                assert c["faults"] == old["faults"] and c["declined"] == old["declined"], alg
                if c["ops"] != old["ops"]:
                    out.setdefault(engine, {})[alg] = c["ops"] - old["ops"]
        return out

    return since


def some(records: list[dict[str, Any]], n: int, **match: Any) -> list[dict[str, Any]]:
    """The first ``n`` records whose fields have the values ``match`` gives."""
    return [r for r in records if all(r[k] == v for k, v in match.items())][:n]


MODES = {"ECB": modes.ECB, "CBC": modes.CBC, "CTR": modes.CTR, "CFB": modes.CFB, "OFB": modes.OFB}


@pytest.mark.parametrize("mode", list(MODES))
def test_t1040_aes_mode_vectors(t1040, mode):
    provider, engine = t1040
    since = fresh_counts(provider)
    records = aes_vectors(mode)
    picked = some(records, 4, direction="encrypt") + some(records, 4, direction="decrypt")
    done: dict[str, int] = {}
    for r in picked:
        mode_obj = MODES[mode]() if r["iv"] is None else MODES[mode](r["iv"])
        cipher = Cipher(algorithms.AES(r["key"]), mode_obj, provider=provider)
        encrypt = r["direction"] == "encrypt"
        ctx = cipher.encryptor() if encrypt else cipher.decryptor()
        source, want = (r["plaintext"], r["ciphertext"])[:: 1 if encrypt else -1]
        assert ctx.update(source) + ctx.finalize() == want, (r["file"], r["count"])
        alg = f"aes-{len(r['key']) * 8}-{mode.lower()}"
        done[alg] = done.get(alg, 0) + 1
    assert since() == {engine.name: done}


def test_t1040_gcm_vectors_with_their_failures(t1040):
    provider, engine = t1040
    since = fresh_counts(provider)
    records = some(gcm_vectors(limit_per_section=1), 10**6, ivlen=96)
    picked = some(records, 12, taglen=128) + some(records, 6, fail=True)
    assert any(r["fail"] for r in picked) and any(r["direction"] == "encrypt" for r in picked)
    done: dict[str, int] = {}
    for r in picked:
        ours = AESGCM(r["key"], tag_length=r["taglen"] // 8, provider=provider)
        if r["direction"] == "encrypt":
            assert ours.encrypt(r["iv"], r["pt"], r["aad"]) == r["ct"] + r["tag"]
        elif r["fail"]:
            with pytest.raises(InvalidTag):
                ours.decrypt(r["iv"], r["ct"] + r["tag"], r["aad"])
        else:
            assert ours.decrypt(r["iv"], r["ct"] + r["tag"], r["aad"]) == r["pt"]
        alg = f"aes-{r['keylen']}-gcm"
        done[alg] = done.get(alg, 0) + 1
    assert since() == {engine.name: done}


@pytest.mark.parametrize("name", ["sha1", "sha256", "sha384"])
def test_t1040_hash_and_hmac_vectors(t1040, name):
    provider, engine = t1040
    since = fresh_counts(provider)
    records = hash_vectors(name.upper())
    picked = records[:5] + [r for r in records if r["kind"] == "LongMsg"][:2]
    for r in picked:
        assert hashes.digest(r["msg"], hash_class(name)(), provider=provider) == r["md"]
    macs = hmac_vectors(name)
    for r in macs:
        mac = hmac.HMAC(r["key"], hash_class(name)(), provider=provider)
        mac.update(r["msg"])
        assert mac.finalize() == r["mac"]
    assert since() == {engine.name: {name: len(picked), f"hmac-{name}": len(macs)}}


def test_t1040_rsa_and_ecdsa_signature_vectors(t1040):
    provider, engine = t1040
    since = fresh_counts(provider)
    rsa_records = rsa_sigver_vectors()
    picked = some(rsa_records, 3, mod=2048, result=True)
    picked += some(rsa_records, 3, mod=2048, result=False)
    for r in picked:
        key = rsa.public_key_from_numbers(rsa.RSAPublicNumbers(r["e"], r["n"]), provider=provider)
        hash_cls = hash_class(r["hash"])
        pad = (
            padding.PKCS1v15()
            if r["padding"] == "pkcs1v15"
            else padding.PSS(padding.MGF1(hash_cls()), r["salt_len"])
        )
        try:
            key.verify(r["signature"], r["msg"], pad, hash_cls())
            verified = True
        except InvalidSignature:
            verified = False
        assert verified == r["result"], r["reason"]
    ec_records = ecdsa_sigver_vectors()
    ec_picked = some(ec_records, 3, curve="P-256", result=True)
    ec_picked += some(ec_records, 3, curve="P-256", result=False)
    for r in ec_picked:
        numbers = ref_ec.EllipticCurvePublicNumbers(r["qx"], r["qy"], ref_ec.SECP256R1())
        key = ec.EllipticCurvePublicKey(numbers.public_key(), provider=provider)
        algorithm = ec.ECDSA(hash_class(r["hash"])())
        try:
            key.verify(encode_dss_signature(r["r"], r["s"]), r["msg"], algorithm)
            verified = True
        except InvalidSignature:
            verified = False
        assert verified == r["result"], r["reason"]
    own = rsa.RSAPrivateKey(RSA_KEY, provider=provider)
    signature = own.sign(b"t1040", padding.PKCS1v15(), ref_hashes.SHA256())
    RSA_KEY.public_key().verify(signature, b"t1040", padding.PKCS1v15(), ref_hashes.SHA256())
    assert since() == {
        engine.name: {
            "rsa-2048-public": len(picked),
            "ecdsa-p256-verify": len(ec_picked),
            "rsa-2048-private": 1,
        }
    }


def test_t1040_ecdh_vectors_and_ffdhe_agreement(t1040):
    provider, engine = t1040
    since = fresh_counts(provider)
    picked = some(ecdh_kas_vectors(), 4, curve="P-256", result=True)
    for r in picked:
        own = ec.derive_private_key(r["iut_private"], ref_ec.SECP256R1(), provider=provider)
        peer = ref_ec.EllipticCurvePublicNumbers(r["peer_qx"], r["peer_qy"], ref_ec.SECP256R1())
        assert own.exchange(ec.ECDH(), peer.public_key()) == r["z"]
    # The loaders' FFC vectors use DSA-style groups, not RFC 7919's: FFDHE against pow().
    z = dh.DHPrivateKey(DH_KEY, provider=provider).exchange(DH_PEER)
    p = DH_KEY.parameters().parameter_numbers().p
    x, y = DH_KEY.private_numbers().x, DH_PEER.public_numbers().y
    assert z == pow(y, x, p).to_bytes(256, "big")
    assert since() == {engine.name: {"ecdh-p256": len(picked), "ffdhe2048": 1}}


# ---------------------------------------------------------------------- (i) the commands


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    out, _ = capsys.readouterr()
    return code, out


def test_engines_lists_what_the_block_has_what_it_claims_and_its_figures(capsys):
    code, out = run_cli(capsys, "engines", "--engine", "caam:model=t2080", "--json")
    assert code == 0
    row = next(r for r in json.loads(out)["engines"] if r["name"] == "caam:model=t2080")
    assert row["available"] and row["reason"] == ""
    detail = row["detail"]
    assert detail["era"] >= 1 and detail["ring depth"] == 64 and detail["pointers"] == "32-bit"
    assert detail["CHAs"]["AES"] >= 1 and detail["CHAs"]["PK"] == 1 and detail["GCM"] is True
    assert {"aes-256-gcm", "sha512", "rsa-4096-private", "ecdsa-p521-sign", "drbg"} <= set(
        row["algorithms"]
    )
    assert "ffdhe8192" not in row["algorithms"]  # past the PKHA's 4096 bits
    assert row["figures"]["jobs"] == row["figures"]["rng_instantiations"] == 1
    code, out = run_cli(capsys, "engines", "--engine", "caam:model=t2080", "-v")
    assert code == 0 and "caam:model=t2080 figures: jobs 1," in out
    assert "era: " in out and "ring depth: 64" in out


def test_engines_says_why_there_is_no_caam_without_repeating_the_engines_name(
    monkeypatch, tmp_path, capsys
):
    from cryptoffload.engines import caam as caam_engine

    monkeypatch.setattr(caam_engine, "DEVICE_TREE", tmp_path)  # a machine without the block
    code, out = run_cli(capsys, "engines", "--engine", "caam", "--json")
    row = next(r for r in json.loads(out)["engines"] if r["name"] == "caam")
    assert code == 0 and row["reason"].startswith("no SEC/CAAM block on this machine"), row
    code, out = run_cli(capsys, "engines", "--engine", "caam")
    assert code == 0 and "not available: no SEC/CAAM block" in out, out


def test_bench_has_caam_rows_with_a_speed_an_offload_share_and_figures(capsys, tmp_path):
    saved = tmp_path / "bench.json"
    argv = ["bench", "--engines", "software,caam:model=t2080", "--algs", "aes-128-gcm,sha256"]
    argv += ["--time", "0.05", "--trials", "2", "--quiet", "--out", str(saved)]
    code, out = run_cli(capsys, *argv)
    assert code == 0
    lines = [line for line in out.splitlines() if "caam:model=t2080" in line]
    assert len(lines) == 4 and all("MiB/s" in line for line in lines)
    rows = [r for r in json.loads(saved.read_text())["rows"] if r["engine"] == "caam:model=t2080"]
    assert len(rows) == 4
    for row in rows:
        assert row["offloaded"] and row["offload_share"] == 1.0 and row["median"] > 0
        assert row["figures"]["jobs"] > 0 and row["figures"]["errors"] == {}
    software = [r for r in json.loads(saved.read_text())["rows"] if r["engine"] == "software"]
    assert software and all("figures" not in r for r in software)


def test_a_rows_figures_are_how_the_engines_figures_moved_over_it():
    from cryptoffload.tools.bench.runner import figures_change

    before = {"jobs": 1, "errors": {"0x1": 1}, "dma_in_use": 92, "transport": "model:t2080"}
    after = {"jobs": 4, "errors": {"0x1": 1, "0x2": 2}, "dma_in_use": 76, "transport": "x"}
    assert figures_change(before, after) == {
        "jobs": 3,
        "errors": {"0x2": 2},
        "dma_in_use": -16,
        "transport": "x",
    }


def test_selftest_passes_on_the_imx7d_model(capsys):
    code, out = run_cli(capsys, "selftest", "--engine", "caam:model=imx7d", "--json")
    data = json.loads(out)
    assert code == 0 and data["failed"] == 0
    mine = [r for r in data["results"] if r["engine"] == "caam:model=imx7d"]
    assert mine and {r["status"] for r in mine} == {"pass"}
    assert {"aes-128-gcm", "sha256", "rsa-2048-private", "ecdh-p256"} <= {
        r["algorithm"] for r in mine
    }


@pytest.mark.parametrize("part", ["t2080", "imx7d"])
@pytest.mark.parametrize(
    ("mode", "tag_length"), [("gcm", 16), ("gcm", 12), ("gcm", 4), ("ccm", 16), ("ccm", 8)]
)
def test_every_byte_of_an_aead_tag_is_checked_by_the_block(part, mode, tag_length):
    """An altered bit in any byte of a GCM or CCM tag, first to last, is InvalidTag from the
    engine (counted as its op, never a fault) with no plaintext."""
    from cryptoffload.aead import AESCCM

    provider = Provider([f"caam:model={part}"], policy=Policy(min_size={"*": 0}))
    key = bytes(range(16))
    if mode == "gcm":
        aead, nonce = AESGCM(key, tag_length=tag_length, provider=provider), bytes(12)
    else:
        aead, nonce = AESCCM(key, tag_length=tag_length, provider=provider), bytes(13)
    sealed = aead.encrypt(nonce, b"every tag byte counts" * 3, b"aad")
    for i in range(len(sealed) - tag_length, len(sealed)):
        altered = bytearray(sealed)
        altered[i] ^= 0x80
        with pytest.raises(InvalidTag):
            aead.decrypt(nonce, bytes(altered), b"aad")
    cell = provider.counters.snapshot()[provider.engines[0].name][f"aes-128-{mode}"]
    assert (cell["ops"], cell["faults"]) == (1 + tag_length, 0)
    provider.close()


def test_aead_ops_take_the_engines_session_and_answer_as_its_run(made):
    from cryptography.hazmat.primitives.ciphers.aead import AESCCM as RefCCM

    from cryptoffload.aead import AESCCM

    provider, engine = caam()
    key = bytes(range(16))
    boxes = [
        (AESGCM(key, provider=provider), RefGCM(key), 12),
        (AESCCM(key, provider=provider), RefCCM(key), 13),
    ]
    for ours, ref, nonce_len in boxes:
        for n in (0, 1, 16, 100, 1400):
            nonce, data = bytes(range(nonce_len)), bytes(range(n % 256)) * (n // 256 + 1)
            data = data[:n]
            sealed = ours.encrypt(nonce, data, b"aad")
            assert sealed == ref.encrypt(nonce, data, b"aad")
            assert ours.decrypt(nonce, sealed, b"aad") == data
        with pytest.raises(InvalidTag):
            ours.decrypt(nonce, bytes(len(sealed)), b"aad")
        assert type(ours._session).__name__ == "_AeadSession"
    for alg in ("aes-128-gcm", "aes-128-ccm"):
        assert cell(provider, engine.name, alg)["ops"] == 11
        assert cell(provider, engine.name, alg)["faults"] == 0
    assert cell(provider, "software", "aes-128-gcm") == _EMPTY
