"""Streaming AES-GCM on the CAAM model: the recipe's INIT/UPDATE/FINALIZE jobs and the model's
class-1 context save/restore, held to OpenSSL over random splits of AAD and message."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given, settings
from hypothesis import strategies as st

from cryptoffload.caam import status
from cryptoffload.caam.jr.driver import Driver
from cryptoffload.caam.jr.transport import ModelTransport
from cryptoffload.caam.model import CaamModel
from cryptoffload.caam.recipes import gcm_stream
from cryptoffload.caam.recipes.base import CaamError, IcvError, execute
from cryptoffload.errors import Unavailable

SETUPS = [("t2080", False), ("imx7d", False), ("t2080", True)]
TAGS = [4, 8, 12, 13, 14, 15, 16]


def _driver(part: str, long_pointers: bool) -> Driver:
    return Driver(ModelTransport(CaamModel(part, seed=b"gcm")), long_pointers=long_pointers)


@pytest.fixture(scope="module", params=SETUPS, ids=lambda s: s[0] + ("-long" if s[1] else ""))
def drv(request: pytest.FixtureRequest) -> Iterator[Driver]:
    driver = _driver(*request.param)
    yield driver
    driver.close()


def pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at the given points (taken modulo its length + 1)."""
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)] or [b""]


def reference(key: bytes, iv: bytes, aad: bytes, msg: bytes) -> tuple[bytes, bytes]:
    enc = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
    enc.authenticate_additional_data(aad)
    out = enc.update(msg) + enc.finalize()
    return out, enc.tag


cases = st.fixed_dictionaries(
    {
        "key": st.sampled_from([16, 24, 32]).flatmap(lambda n: st.binary(min_size=n, max_size=n)),
        "iv": st.binary(min_size=12, max_size=12),
        "aad": st.binary(max_size=80),
        "msg": st.binary(max_size=120),
        "aad_cuts": st.lists(st.integers(0, 200), max_size=5),
        "msg_cuts": st.lists(st.integers(0, 200), max_size=6),
        "tag": st.sampled_from(TAGS),
    }
)


def _feed(stream: gcm_stream.GcmStream, aad: list[bytes], msg: list[bytes]) -> list[bytes]:
    for piece in aad:
        stream.update_aad(piece)
    return [stream.update(piece) for piece in msg]


@settings(max_examples=60, deadline=None)
@given(case=cases)
def test_split_streams_equal_openssl(drv: Driver, case: dict) -> None:
    key, iv, aad, msg = case["key"], case["iv"], case["aad"], case["msg"]
    ciphertext, tag = reference(key, iv, aad, msg)
    aad_parts, msg_parts = pieces(aad, case["aad_cuts"]), pieces(msg, case["msg_cuts"])
    enc = gcm_stream.open_stream(drv, key, iv, encrypt=True)
    outs = _feed(enc, aad_parts, msg_parts)
    assert [len(o) for o in outs] == [len(p) for p in msg_parts]  # every byte answered at once
    assert b"".join(outs) == ciphertext
    assert enc.finalize() == tag
    dec = gcm_stream.open_stream(drv, key, iv, encrypt=False)
    ct_parts = pieces(ciphertext, case["msg_cuts"])
    assert b"".join(_feed(dec, aad_parts, ct_parts)) == msg
    assert dec.finalize(tag[: case["tag"]]) == b""


@settings(max_examples=25, deadline=None)
@given(case=cases, flip=st.integers(0, 127))
def test_tampered_tag_is_an_icv_error(drv: Driver, case: dict, flip: int) -> None:
    key, iv, aad, msg = case["key"], case["iv"], case["aad"], case["msg"]
    ciphertext, tag = reference(key, iv, aad, msg)
    bad = bytearray(tag[: case["tag"]])
    bad[flip // 8 % len(bad)] ^= 1 << flip % 8
    dec = gcm_stream.open_stream(drv, key, iv, encrypt=False)
    _feed(dec, pieces(aad, case["aad_cuts"]), pieces(ciphertext, case["msg_cuts"]))
    with pytest.raises(IcvError):
        dec.finalize(bytes(bad))


def test_long_updates_run_as_several_jobs(drv: Driver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gcm_stream, "CHUNK", 64)
    key, iv, msg = bytes(range(16)), bytes(12), bytes(range(256)) * 3 + b"tail"
    ciphertext, tag = reference(key, iv, b"head", msg)
    before = drv.figures["jobs"]
    enc = gcm_stream.open_stream(drv, key, iv, encrypt=True)
    enc.update_aad(b"head")
    assert enc.update(msg) == ciphertext
    assert drv.figures["jobs"] - before == len(msg) // 64 + 1  # 12 chunks and one peek
    assert enc.finalize() == tag


def test_long_aad_runs_as_several_jobs(drv: Driver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gcm_stream, "CHUNK", 64)
    key, iv, aad = bytes(range(16)), bytes(12), bytes(range(200))
    ciphertext, tag = reference(key, iv, aad, b"payload")
    before = drv.figures["jobs"]
    enc = gcm_stream.open_stream(drv, key, iv, encrypt=True)
    enc.update_aad(aad)
    assert drv.figures["jobs"] - before == 3  # 192 whole bytes in 64-byte jobs; 8 wait
    assert enc.update(b"payload") == ciphertext
    assert enc.finalize() == tag


def test_the_saved_context_holds_counter_j0_and_lengths(drv: Driver) -> None:
    key, iv = bytes(16), bytes(range(12))
    step = gcm_stream.prepare_step(drv, key, iv, "init", b"", bytes(16), bytes(32), encrypt=True)
    _, context = execute(drv, step)
    assert len(context) == gcm_stream.CONTEXT
    assert context[32:48] == iv + b"\0\0\0\1"  # J0
    assert context[16:32] == iv + b"\0\0\0\3"  # two message blocks used counters 2 and 3
    assert int.from_bytes(context[48:56], "big") == 128  # len(A) in bits
    assert int.from_bytes(context[56:64], "big") == 256  # len(C) in bits


def test_aad_after_message_in_a_later_job_is_a_sequence_error(drv: Driver) -> None:
    key, iv = bytes(16), bytes(12)
    _, context = execute(
        drv, gcm_stream.prepare_step(drv, key, iv, "init", b"", b"", bytes(16), encrypt=True)
    )
    with pytest.raises(CaamError) as err:
        execute(
            drv,
            gcm_stream.prepare_step(drv, key, iv, "update", context, bytes(16), b"", encrypt=True),
        )
    assert err.value.status & 0xFF == status.CHA_AES << 4 | status.ERR_SEQUENCE


def test_other_iv_lengths_are_declined(drv: Driver) -> None:
    with pytest.raises(Unavailable) as err:
        gcm_stream.open_stream(drv, bytes(16), bytes(16), encrypt=True)
    assert err.value.reason == "unsupported"
