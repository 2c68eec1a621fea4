"""Tests for the SP 800-90A CTR_DRBG (AES-256) core."""

from __future__ import annotations

import copy
import importlib.util
import pickle
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from cryptoffload.blocks.ctr_drbg import (
    MAX_REQUEST_BYTES,
    SEED_LEN,
    CtrDrbg,
    ReseedRequiredError,
)


def _load_vectors():
    # Loaded by path so the test works whether or not tests/ is a package.
    path = Path(__file__).parent / "vectors" / "ctr_drbg_vectors.py"
    spec = importlib.util.spec_from_file_location("_ctr_drbg_vectors", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


VECTORS = _load_vectors()
H = bytes.fromhex


def _vector_id(record: dict) -> str:
    return f"{record['group']} COUNT={record['count']}"


@pytest.mark.parametrize("record", VECTORS.USE_DF, ids=_vector_id)
def test_cavp_use_df(record: dict) -> None:
    drbg = CtrDrbg(H(record["entropy"]), H(record["nonce"]), H(record["personalization"]))
    expected = H(record["returned"])
    drbg.generate(len(expected), H(record["additional1"]))
    assert drbg.generate(len(expected), H(record["additional2"])) == expected


@pytest.mark.parametrize("record", VECTORS.NO_DF, ids=_vector_id)
def test_cavp_no_df(record: dict) -> None:
    drbg = CtrDrbg(H(record["entropy"]), personalization=H(record["personalization"]), use_df=False)
    expected = H(record["returned"])
    drbg.generate(len(expected), H(record["additional1"]))
    assert drbg.generate(len(expected), H(record["additional2"])) == expected


@pytest.mark.parametrize("record", VECTORS.RESEED, ids=_vector_id)
def test_cavp_with_reseed(record: dict) -> None:
    drbg = CtrDrbg(
        H(record["entropy"]),
        H(record["nonce"]),
        H(record["personalization"]),
        use_df=record["use_df"],
    )
    drbg.reseed(H(record["entropy_reseed"]), H(record["additional_reseed"]))
    expected = H(record["returned"])
    drbg.generate(len(expected), H(record["additional1"]))
    assert drbg.generate(len(expected), H(record["additional2"])) == expected


def test_vector_counts() -> None:
    for records in (VECTORS.USE_DF, VECTORS.NO_DF):
        with_ai = [r for r in records if r["additional1"]]
        without_ai = [r for r in records if not r["additional1"]]
        assert len(with_ai) >= 3
        assert len(without_ai) >= 3


class _BlockwiseModel:
    """Textbook CTR_DRBG generate/update, one ECB call per block, for cross-checking."""

    def __init__(self, key: bytes, v: bytes) -> None:
        self.key = key
        self.v = int.from_bytes(v, "big")

    def _next_block(self) -> bytes:
        self.v = (self.v + 1) % (1 << 128)
        encryptor = Cipher(algorithms.AES(self.key), modes.ECB()).encryptor()
        return encryptor.update(self.v.to_bytes(16, "big")) + encryptor.finalize()

    def _update(self, provided: bytes) -> None:
        temp = b"".join(self._next_block() for _ in range(3))
        seed = bytes(a ^ b for a, b in zip(temp, provided, strict=True))
        self.key = seed[:32]
        self.v = int.from_bytes(seed[32:], "big")

    def generate(self, n: int, additional: bytes = b"") -> bytes:
        padded = additional.ljust(SEED_LEN, b"\0")
        if additional:
            self._update(padded)
        out = b""
        while len(out) < n:
            out += self._next_block()
        self._update(padded)
        return out[:n]


@pytest.mark.parametrize("start_v", [None, b"\xff" * 15 + b"\xfd"], ids=["seeded", "near-wrap"])
def test_bulk_generate_matches_blockwise_model(start_v: bytes | None) -> None:
    drbg = CtrDrbg(bytes(range(48)), use_df=False)
    if start_v is not None:
        drbg._v[:] = start_v  # exercise the 2**128 counter wrap inside one request
    model = _BlockwiseModel(bytes(drbg._key), bytes(drbg._v))
    for n, additional in [(0, b""), (1, b""), (15, b"x"), (16, b""), (17, b"y" * 48), (1000, b"")]:
        assert drbg.generate(n, additional) == model.generate(n, additional)
    assert drbg.generate(MAX_REQUEST_BYTES) == model.generate(MAX_REQUEST_BYTES)


def test_random_bytes_is_a_sequence_of_max_size_requests() -> None:
    n = 2 * MAX_REQUEST_BYTES + 123
    a = CtrDrbg(b"\x11" * 32, b"\x22" * 16)
    b = CtrDrbg(b"\x11" * 32, b"\x22" * 16)
    out = a.random_bytes(n)
    assert len(out) == n
    assert out == b.generate(MAX_REQUEST_BYTES) + b.generate(MAX_REQUEST_BYTES) + b.generate(123)
    assert a.reseed_counter == b.reseed_counter == 4
    assert a.random_bytes(0) == b""
    assert a.reseed_counter == 4


def test_reseed_counter_increments_and_resets() -> None:
    drbg = CtrDrbg(b"\x01" * 32)
    assert drbg.reseed_counter == 1
    for i in range(5):
        drbg.generate(16)
        assert drbg.reseed_counter == 2 + i
    drbg.reseed(b"\x02" * 32, b"extra")
    assert drbg.reseed_counter == 1


def test_generate_zero_bytes() -> None:
    drbg = CtrDrbg(b"\x01" * 32)
    twin = CtrDrbg(b"\x01" * 32)
    assert drbg.generate(0) == b""
    assert drbg.reseed_counter == 2
    # A zero-byte request still runs the state update, as in the standard.
    assert drbg.generate(32) != twin.generate(32)


def test_oversized_and_negative_requests() -> None:
    drbg = CtrDrbg(b"\x01" * 32)
    assert len(drbg.generate(MAX_REQUEST_BYTES)) == MAX_REQUEST_BYTES
    counter = drbg.reseed_counter
    with pytest.raises(ValueError, match="random_bytes"):
        drbg.generate(MAX_REQUEST_BYTES + 1)
    with pytest.raises(ValueError):
        drbg.generate(-1)
    with pytest.raises(ValueError):
        drbg.random_bytes(-1)
    with pytest.raises(TypeError):
        drbg.generate(1.5)  # type: ignore[arg-type]
    assert drbg.reseed_counter == counter


def test_reseed_interval() -> None:
    drbg = CtrDrbg(b"\x01" * 32, reseed_interval=3)
    for _ in range(3):
        assert not drbg.needs_reseed
        drbg.generate(8)
    assert drbg.needs_reseed
    with pytest.raises(ReseedRequiredError):
        drbg.generate(8)
    drbg.reseed(b"\x02" * 32)
    assert not drbg.needs_reseed
    # random_bytes refuses up front rather than stopping half way.
    with pytest.raises(ReseedRequiredError):
        drbg.random_bytes(3 * MAX_REQUEST_BYTES + 1)
    assert drbg.reseed_counter == 1
    assert len(drbg.random_bytes(3 * MAX_REQUEST_BYTES)) == 3 * MAX_REQUEST_BYTES
    assert drbg.needs_reseed


def test_default_reseed_interval() -> None:
    drbg = CtrDrbg(b"\x01" * 32)
    assert drbg.reseed_interval == 2**20


@pytest.mark.parametrize("interval", [0, 2**48 + 1])
def test_reseed_interval_bounds(interval: int) -> None:
    with pytest.raises(ValueError):
        CtrDrbg(b"\x01" * 32, reseed_interval=interval)


def test_length_validation_df() -> None:
    with pytest.raises(ValueError, match="at least 32"):
        CtrDrbg(b"\x01" * 31)
    drbg = CtrDrbg(b"\x01" * 32)
    with pytest.raises(ValueError, match="at least 32"):
        drbg.reseed(b"\x01" * 16)
    # Any length at or above the minimum is fine with the derivation function.
    CtrDrbg(b"\x01" * 100, b"n" * 16, b"p" * 1000).generate(16, b"a" * 1000)


def test_length_validation_no_df() -> None:
    with pytest.raises(ValueError, match="exactly 48"):
        CtrDrbg(b"\x01" * 32, use_df=False)
    with pytest.raises(ValueError, match="exactly 48"):
        CtrDrbg(b"\x01" * 49, use_df=False)
    with pytest.raises(ValueError, match="personalization"):
        CtrDrbg(b"\x01" * 48, personalization=b"p" * 49, use_df=False)
    with pytest.raises(ValueError, match="nonce"):
        CtrDrbg(b"\x01" * 48, nonce=b"n" * 16, use_df=False)
    drbg = CtrDrbg(b"\x01" * 48, use_df=False)
    with pytest.raises(ValueError, match="additional"):
        drbg.generate(16, b"a" * 49)
    with pytest.raises(ValueError, match="exactly 48"):
        drbg.reseed(b"\x01" * 47)
    with pytest.raises(ValueError, match="additional"):
        drbg.reseed(b"\x01" * 48, b"a" * 49)
    assert drbg.reseed_counter == 1


@pytest.mark.parametrize("bad", ["x" * 48, 48, None])
def test_non_bytes_inputs_rejected(bad: object) -> None:
    with pytest.raises(TypeError):
        CtrDrbg(bad)  # type: ignore[arg-type]


def test_bytes_like_inputs_accepted() -> None:
    a = CtrDrbg(bytearray(b"\x05" * 32), memoryview(b"\x06" * 16)).generate(32)
    b = CtrDrbg(b"\x05" * 32, b"\x06" * 16).generate(32)
    assert a == b


@pytest.mark.parametrize("use_df", [True, False])
def test_repr_carries_no_key_material(use_df: bool) -> None:
    drbg = CtrDrbg(b"\x01" * 48, use_df=use_df)
    drbg.generate(16)
    text = repr(drbg)
    key, v = bytes(drbg._key), bytes(drbg._v)
    for secret in (key, v, b"\x01" * 48):
        assert secret.hex() not in text.lower()
        assert secret.hex().upper() not in text
        assert repr(secret) not in text
    assert "reseed_counter=2" in text
    assert ("use df" if use_df else "no df") in text
    assert str(drbg) == text


def test_same_seed_same_stream_different_seed_different_stream() -> None:
    seed = bytes(range(32))
    a = CtrDrbg(seed, b"nonce-nonce-nonce", b"app")
    b = CtrDrbg(seed, b"nonce-nonce-nonce", b"app")
    assert [a.generate(100) for _ in range(4)] == [b.generate(100) for _ in range(4)]
    assert a.random_bytes(200_000) == b.random_bytes(200_000)

    first = CtrDrbg(seed).generate(64)
    assert CtrDrbg(seed[:-1] + b"\xff").generate(64) != first
    assert CtrDrbg(seed, b"other nonce").generate(64) != first
    assert CtrDrbg(seed, personalization=b"other").generate(64) != first
    assert CtrDrbg(seed.ljust(48, b"\0"), use_df=False).generate(64) != first


def test_additional_input_changes_output() -> None:
    seed = b"\x07" * 32
    assert CtrDrbg(seed).generate(32, b"a") != CtrDrbg(seed).generate(32, b"b")
    assert CtrDrbg(seed).generate(32, b"a") != CtrDrbg(seed).generate(32)


def test_zeroize() -> None:
    drbg = CtrDrbg(b"\x01" * 32)
    key_buf, v_buf = drbg._key, drbg._v
    drbg.zeroize()
    assert drbg.zeroized
    assert key_buf == bytearray(32) and v_buf == bytearray(16)
    assert drbg._key is None and drbg._v is None
    with pytest.raises(RuntimeError, match="zeroized"):
        drbg.generate(16)
    with pytest.raises(RuntimeError, match="zeroized"):
        drbg.random_bytes(16)
    with pytest.raises(RuntimeError, match="zeroized"):
        drbg.reseed(b"\x02" * 32)
    assert "zeroized" in repr(drbg)
    drbg.zeroize()


def test_state_cannot_be_copied() -> None:
    drbg = CtrDrbg(b"\x01" * 32)
    with pytest.raises(TypeError):
        copy.copy(drbg)
    with pytest.raises(TypeError):
        copy.deepcopy(drbg)
    with pytest.raises(TypeError):
        pickle.dumps(drbg)
