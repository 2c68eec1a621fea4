"""A planted key never shows: not in reprs, errors, tracebacks, logs, counters, engine reports,
the command line's output or benchmark reports, on any engine set."""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.asymmetric import ec as c_ec

from cryptoffload import Policy, ec, modes
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.cmac import CMAC
from cryptoffload.core.counters import prometheus_text
from cryptoffload.core.provider import Provider
from cryptoffload.gmac import GMAC
from cryptoffload.hashes import SHA256
from cryptoffload.hmac import HMAC
from cryptoffload.tools import cli
from cryptoffload.tools.bench import cases

#: A key nobody would write by accident: any 6-byte run of it found in text is a leak.
PLANTED = bytes.fromhex("c0ffee5eed5ca1ab1ede7ec7ab1e0dd5")
PLANTED_256 = PLANTED + bytes.fromhex("f00dfacefeedbeefbaadcafe0ddba115")


def spellings(secret: bytes) -> Iterable[str]:
    """The ways a secret turns up in text: hex either case, bytes reprs, runs of either."""
    for start in range(0, len(secret) - 5):
        run = secret[start : start + 6]
        yield run.hex()
        yield run.hex().upper()
        yield repr(run)[2:-1]
        yield ":".join(f"{b:02x}" for b in run)


def assert_hidden(text: str, where: str, secrets: Iterable[bytes] = (PLANTED, PLANTED_256)) -> None:
    for secret in secrets:
        for spelling in spellings(secret):
            assert spelling not in text, f"key material ({spelling}) appears in {where}"


def assert_int_hidden(text: str, where: str, value: int) -> None:
    digits = str(value)
    for start in range(0, len(digits) - 11, 4):
        assert digits[start : start + 12] not in text, f"a private number appears in {where}"
    hexed = f"{value:x}"
    for start in range(0, len(hexed) - 11, 4):
        assert hexed[start : start + 12] not in text.lower(), f"a private number appears in {where}"


def errors_of(calls: Iterable[Callable[[], Any]]) -> list[BaseException]:
    caught = []
    for call in calls:
        try:
            call()
        except Exception as exc:  # every error is what the test reads
            caught.append(exc)
        else:
            raise AssertionError(f"{call} should have raised")
    return caught


def error_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + repr(exc) + str(exc)


def exercise(provider: Provider) -> list[str]:
    """Run every symmetric family with the planted key, right and wrong; return what shows."""
    shown: list[str] = []
    gcm = AESGCM(PLANTED, provider=provider)
    ccm = AESCCM(PLANTED, tag_length=8, provider=provider)
    sealed = gcm.encrypt(bytes(12), b"message" * 20, b"aad")
    cipher = Cipher(algorithms.AES(PLANTED_256), modes.CBC(bytes(16)), provider=provider)
    enc = cipher.encryptor()
    enc.update(bytes(64))
    mac = HMAC(PLANTED, SHA256(), provider=provider)
    mac.update(b"data")
    cmac = CMAC(algorithms.AES(PLANTED), provider=provider)
    cmac.update(b"data")
    gmac = GMAC(PLANTED, bytes(12), provider=provider)
    gmac.update(b"data")
    shown += [repr(o) + str(o) for o in (gcm, ccm, cipher, enc, mac, cmac, gmac)]
    shown += [repr(algorithms.AES(PLANTED)), repr(modes.CBC(bytes(16)))]
    tampered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    failures = errors_of(
        [
            lambda: gcm.decrypt(bytes(12), tampered, b"aad"),
            lambda: gcm.encrypt(bytes(7), b"x", None),
            lambda: ccm.decrypt(bytes(13), b"short", None),
            lambda: AESGCM(PLANTED[:15], provider=provider),
            lambda: Cipher(algorithms.AES(PLANTED), modes.CBC(bytes(8)), provider=provider),
            lambda: mac.verify(b"\x00" * 32),
            lambda: gmac.verify(b"\x00" * 16),
            lambda: (enc.update(bytes(3)), enc.finalize()),
        ]
    )
    assert any(isinstance(e, InvalidTag) for e in failures)
    assert any(isinstance(e, InvalidSignature) for e in failures)
    shown += [error_text(e) for e in failures]
    cmac.finalize()
    shown += [repr(provider), repr(provider.engines), provider.counters.to_json()]
    shown.append(prometheus_text(provider.counters.snapshot()))
    for engine in provider.engines:
        shown.append(repr(engine) + repr(getattr(engine, "figures", None)))
    return shown


def test_planted_key_is_in_no_repr_error_log_or_counter_on_any_engine_set(provider, caplog):
    caplog.set_level(logging.DEBUG)
    shown = exercise(provider)
    for i, text in enumerate(shown):
        assert_hidden(text, f"output #{i} on engines {[e.name for e in provider.engines]}")
    assert_hidden(caplog.text, "the log")


def test_private_scalar_is_in_no_repr_error_or_counter(provider, caplog):
    caplog.set_level(logging.DEBUG)
    reference = c_ec.generate_private_key(c_ec.SECP256R1())
    scalar = reference.private_numbers().private_value
    key = ec.derive_private_key(scalar, ec.SECP256R1(), provider=provider)
    signature = key.sign(b"message", ec.ECDSA(SHA256()))
    shown = [repr(key), str(key), repr(key.public_key()), repr(signature)]
    failures = errors_of(
        [
            lambda: key.public_key().verify(b"\x30\x00", b"message", ec.ECDSA(SHA256())),
            lambda: key.sign(b"message", "not an algorithm"),
            lambda: key.exchange("not an ECDH", key.public_key()),
        ]
    )
    shown += [error_text(e) for e in failures]
    shown += [provider.counters.to_json(), prometheus_text(provider.counters.snapshot())]
    for i, text in enumerate([*shown, caplog.text]):
        assert_int_hidden(text, f"output #{i}", scalar)


def test_engines_listing_and_bench_reports_hold_no_key(monkeypatch, tmp_path, capsys):
    """The bench's own keys (planted here) stay out of its table, JSON report and the
    engines listing, with the CAAM model taking the work so engine figures are shown too."""
    monkeypatch.setattr(cases, "_key", lambda bits: PLANTED_256[: bits // 8])
    report = tmp_path / "bench.json"
    argv = [
        "bench",
        "--engines",
        "caam:model=t2080",
        "--algs",
        "aes-128-gcm,aes-256-cbc,hmac-sha256,cmac-aes-128",
        "--trials",
        "1",
        "--time",
        "0.01",
        "--quiet",
        "--out",
        str(report),
    ]
    assert cli.main(argv) == 0
    assert cli.main(["engines", "--engines", "caam:model=t2080", "--json"]) == 0
    out = capsys.readouterr()
    rows = json.loads(report.read_text())
    assert rows  # the report was written and holds the rows
    assert_hidden(out.out + out.err, "bench and engines output")
    assert_hidden(report.read_text(), "the bench JSON report")


@pytest.mark.parametrize("spec", ["caam:model=t2080", "caam:model=imx7d"])
def test_caam_engine_errors_and_figures_hold_no_key_after_faults(spec, caplog):
    """A fault inside the engine (a register write failing) ends in software's answer;
    whatever the engine logged or counted about it holds no key."""
    caplog.set_level(logging.DEBUG)
    provider = Provider([spec], policy=Policy(min_size={"*": 0}))
    engine = provider.engines[0]
    gcm = AESGCM(PLANTED, provider=provider)
    want = gcm.encrypt(bytes(12), b"x" * 100, None)
    ring = engine._driver._ring  # the ring writes its registers through its own reference
    original = ring._write32
    calls = {"n": 0}

    def refuse_jobs(offset: int, value: int) -> None:
        calls["n"] += 1
        raise OSError(5, "Input/output error (injected)")

    ring._write32 = refuse_jobs
    try:
        assert gcm.encrypt(bytes(12), b"x" * 100, None) == want
    finally:
        ring._write32 = original
    assert calls["n"] >= 1
    assert provider.counters.snapshot()[engine.name]["aes-128-gcm"]["faults"] == 1
    shown = repr(engine.figures) + provider.counters.to_json() + caplog.text
    assert_hidden(shown, f"{spec} figures, counters and log after a fault")
    provider.close()


@pytest.mark.parametrize("part", ["t2080", "imx7d"])
def test_caam_dma_regions_are_zero_when_freed(part):
    """Every DMA region a job used (plaintext, key parts such as RSA d, p and q, results) is
    wiped before it goes back to the pool: on a board the pool is physical memory."""
    from cryptography.hazmat.primitives.asymmetric import padding

    from cryptoffload import rsa
    from cryptoffload.hashes import SHA256 as OUR_SHA256

    provider = Provider([f"caam:model={part}"], policy=Policy(min_size={"*": 0}))
    engine = provider.engines[0]
    transport = engine._transport
    memory = transport.model.memory
    real_free = transport.free
    dirty: list[int] = []
    freed = {"n": 0}

    def checked_free(phys: int) -> None:
        region = memory._regions.get(phys)
        if region is not None and any(region):
            dirty.append(phys)
        freed["n"] += 1
        real_free(phys)

    transport.free = checked_free
    gcm = AESGCM(PLANTED, provider=provider)
    sealed = gcm.encrypt(bytes(12), b"plaintext" * 50, b"aad")
    assert gcm.decrypt(bytes(12), sealed, b"aad") == b"plaintext" * 50
    with pytest.raises(InvalidTag):
        gcm.decrypt(bytes(12), sealed[:-1] + bytes([sealed[-1] ^ 1]), b"aad")
    enc = Cipher(algorithms.AES(PLANTED_256), modes.CBC(bytes(16)), provider=provider).encryptor()
    enc.update(bytes(4096))
    HMAC(PLANTED, SHA256(), provider=provider).update(b"m" * 300)
    assert gcm.encrypt_many([(bytes(12), b"a" * 64, None), (bytes([1] * 12), b"b" * 64, None)])
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048, provider=provider)
    key.sign(b"message", padding.PKCS1v15(), OUR_SHA256())
    ec_key = ec.generate_private_key(ec.SECP256R1(), provider=provider)
    ec_key.sign(b"message", ec.ECDSA(OUR_SHA256()))
    ec_key.exchange(ec.ECDH(), ec.generate_private_key(ec.SECP256R1()).public_key())
    counts = provider.counters.snapshot()[engine.name]
    assert counts["rsa-2048-private"]["ops"] >= 1 and counts["ecdh-p256"]["ops"] >= 1
    assert freed["n"] > 10
    assert dirty == [], f"{len(dirty)} of {freed['n']} regions went back to the pool unwiped"
    provider.close()
