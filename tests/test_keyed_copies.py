"""KeyedCopies (the twin in use: compiled, or pure under CRYPTOFFLOAD_PURE_PYTHON=1, which
test_directpath runs this file under): a context copied from one kept per key gives what a new
one gives; CMAC's direct path makes its contexts that way."""

from __future__ import annotations

import pytest
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives import cmac as openssl_cmac
from cryptography.hazmat.primitives.ciphers import algorithms

from cryptoffload import cmac
from cryptoffload.core.directpath import KeyedCopies

LIMIT = 8


def _tag(ctx, data: bytes) -> bytes:
    ctx.update(data)
    return ctx.finalize()


@pytest.mark.parametrize(
    "algorithm",
    [
        lambda: algorithms.AES(bytes(range(16))),
        lambda: algorithms.AES(bytes(range(32))),
        lambda: algorithms.AES128(bytes(range(16))),
        lambda: algorithms.AES256(bytes(range(32))),
        lambda: TripleDES(bytes(range(24))),
    ],
)
def test_every_copy_gives_the_tag_a_new_context_gives(algorithm) -> None:
    copies = KeyedCopies(openssl_cmac.CMAC, LIMIT)
    for n in (0, 1, 16, 64, 100):
        data = bytes(range(n))
        assert _tag(copies(algorithm()), data) == _tag(openssl_cmac.CMAC(algorithm()), data)


def test_a_context_fed_does_not_change_the_next_copy() -> None:
    copies = KeyedCopies(openssl_cmac.CMAC, LIMIT)
    key = bytes(16)
    first = copies(algorithms.AES(key))
    first.update(b"fed once")
    second = copies(algorithms.AES(key))
    assert _tag(second, b"m") == _tag(openssl_cmac.CMAC(algorithms.AES(key)), b"m")
    assert _tag(first, b"") == _tag(openssl_cmac.CMAC(algorithms.AES(key)), b"fed once")


def test_one_key_under_two_algorithm_classes_gives_each_its_own_context() -> None:
    made = []

    def make(algorithm):
        made.append(algorithm.__class__)
        return openssl_cmac.CMAC(algorithm)

    copies = KeyedCopies(make, LIMIT)
    key = bytes(range(16))
    copies(algorithms.AES(key))
    copies(algorithms.AES128(key))
    copies(algorithms.AES128(key))
    assert made == [algorithms.AES, algorithms.AES128]


def test_a_key_that_is_not_bytes_is_made_each_time_and_not_kept() -> None:
    made = []

    class Algorithm:
        key = bytearray(16)

    copies = KeyedCopies(lambda algorithm: made.append(algorithm) or object(), LIMIT)
    copies(Algorithm())
    copies(Algorithm())
    assert len(made) == 2
    assert copies._kept == {}


def test_an_error_from_make_reaches_the_caller_and_nothing_is_kept() -> None:
    def make(algorithm):
        raise ValueError("refused")

    copies = KeyedCopies(make, LIMIT)
    with pytest.raises(ValueError, match="refused"):
        copies(algorithms.AES(bytes(16)))
    assert copies._kept == {}


def test_a_full_store_is_emptied_and_clear_forgets_every_key() -> None:
    copies = KeyedCopies(openssl_cmac.CMAC, LIMIT)
    for i in range(LIMIT):
        copies(algorithms.AES(i.to_bytes(16, "big")))
    assert len(copies._kept) == LIMIT
    copies(algorithms.AES(b"\xff" * 16))
    assert list(copies._kept) == [b"\xff" * 16]
    copies.clear()
    assert copies._kept == {}


def test_the_repr_names_the_maker_and_no_key() -> None:
    copies = KeyedCopies(openssl_cmac.CMAC, LIMIT)
    copies(algorithms.AES(b"k" * 16))
    assert "CMAC" in repr(copies)
    assert "kkkk" not in repr(copies)


def test_cmacs_direct_path_copies_its_contexts_from_one_kept_per_key() -> None:
    key = bytes(range(100, 116))
    for data in (b"", b"one", bytes(64)):
        ours = cmac.CMAC(algorithms.AES(key))
        ours.update(data)
        assert ours.finalize() == _tag(openssl_cmac.CMAC(algorithms.AES(key)), data)
    assert cmac._CMAC_COPIES._kept[key][0] is algorithms.AES


def test_a_limit_under_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        KeyedCopies(openssl_cmac.CMAC, 0)


def test_a_call_with_other_than_one_algorithm_is_a_type_error() -> None:
    copies = KeyedCopies(openssl_cmac.CMAC, LIMIT)
    with pytest.raises(TypeError):
        copies()
    with pytest.raises(TypeError):
        copies(algorithms.AES(bytes(16)), algorithms.AES(bytes(16)))
