"""After os.fork() and multiprocessing: children never share an engine's ring or sockets with
the parent, answer right through software or their own contexts, and leave the parent as it was."""

from __future__ import annotations

import multiprocessing
import os
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers import aead as ref_aead
from test_afalg_standin import KEY, cbc, cipher_op, stand_in_engine

from cryptoffload import Policy, Provider
from cryptoffload.aead import AESGCM
from cryptoffload.errors import Unavailable

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")

TAKE_ALL = Policy(min_size={"*": 0})
GCM_KEY = bytes(range(32, 48))
NONCE = bytes(12)


def in_child(work: Callable[[], Any]) -> Any:
    """Run ``work`` in a forked child and return what it returned (or raise what it raised)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running the parent's cleanup
        try:
            try:
                answer: Any = ("ok", work())
            except BaseException as exc:
                answer = ("raised", repr(exc))
            with os.fdopen(write_end, "wb") as out:
                pickle.dump(answer, out)
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as got:
        data = got.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    outcome, value = pickle.loads(data)
    assert outcome == "ok", f"the child raised {value}"
    return value


def gcm(provider: Provider, data: bytes) -> bytes:
    return AESGCM(GCM_KEY, provider=provider).encrypt(NONCE, data, b"aad")


def cell(provider: Provider, engine: str, alg: str = "aes-128-gcm") -> dict:
    return provider.counters.snapshot().get(engine, {}).get(alg, {})


# -- the CAAM engine: the ring stays with the parent --------------------------------------------


@pytest.mark.parametrize("part", ["t2080", "imx7d"])
def test_caam_child_declines_without_touching_the_ring_and_the_parent_keeps_it(part):
    provider = Provider([f"caam:model={part}"], policy=TAKE_ALL)
    engine = provider.engines[0]
    want = ref_aead.AESGCM(GCM_KEY).encrypt(NONCE, b"before fork", b"aad")
    assert gcm(provider, b"before fork") == want
    transport, ring = engine._transport, engine._driver._ring
    jobs_before = engine.figures["jobs"]

    def child() -> dict:
        touched: list[str] = []
        for name in ("read32", "write32", "write", "read", "alloc", "free"):
            setattr(transport, name, lambda *a, name=name: touched.append(name))
        ring._write32 = lambda *a: touched.append("ring register")
        answer = gcm(provider, b"before fork")
        seen = {
            "answer": answer,
            "caam": cell(provider, engine.name),
            "software": cell(provider, "software"),
        }
        provider.close()  # must not reset the parent's ring either
        return seen | {"touched": touched}

    seen = in_child(child)
    assert seen["answer"] == want
    assert seen["touched"] == []
    assert seen["caam"]["declined"] == {"no-device": 1}
    assert seen["software"]["ops"] == 1
    # The parent goes on using its ring as if nothing happened.
    assert gcm(provider, b"before fork") == want
    assert engine.figures["jobs"] > jobs_before
    assert cell(provider, engine.name)["ops"] == 2
    provider.close()


def test_caam_child_reason_names_the_fork():
    provider = Provider(["caam:model=t2080"], policy=TAKE_ALL)
    name = provider.engines[0].name

    def child() -> str:
        with pytest.raises(Unavailable) as declined:
            provider.engines[0]._ready(cipher_op(b"x" * 16, alg="aes-128-cbc"))
        return str(declined.value)

    reason = in_child(child)
    assert "fork" in reason and name in reason
    provider.close()


# -- AF_ALG: the child opens its own sockets -----------------------------------------------------


def test_afalg_child_closes_its_copies_of_the_sockets_and_opens_its_own():
    engine = stand_in_engine("aes-128-cbc")
    data = bytes(range(64))
    assert engine.run(cipher_op(data)) == cbc(data)
    transform = engine.tfms[("aes-128-cbc", KEY)]
    (parent_socket,) = transform.accepted

    def child() -> dict:
        inherited_closed = parent_socket.closed
        answer = engine.run(cipher_op(data))
        return {
            "inherited closed": inherited_closed,
            "answer": answer,
            "accepted": len(transform.accepted),
            "fresh socket used": transform.accepted[-1].calls != [],
        }

    seen = in_child(child)
    assert seen == {
        "inherited closed": True,
        "answer": cbc(data),
        "accepted": 2,
        "fresh socket used": True,
    }
    # The parent's socket was not closed in the parent and is still the one it uses.
    assert not parent_socket.closed
    assert engine.run(cipher_op(data)) == cbc(data)
    assert transform.accepted == [parent_socket]
    assert len(parent_socket.calls) == 2


# -- multiprocessing -------------------------------------------------------------------------------

_POOL_PROVIDER: Provider | None = None


def _pool_work(data: bytes) -> tuple[bytes, dict]:
    provider = _POOL_PROVIDER if _POOL_PROVIDER is not None else Provider(["caam:model=t2080"])
    answer = gcm(provider, data)
    return answer, provider.counters.snapshot()


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_multiprocessing_workers_answer_right_and_never_use_the_parents_ring(method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    global _POOL_PROVIDER
    _POOL_PROVIDER = Provider(["caam:model=t2080"], policy=TAKE_ALL)
    engine = _POOL_PROVIDER.engines[0]
    try:
        want = ref_aead.AESGCM(GCM_KEY).encrypt(NONCE, b"warm", b"aad")
        assert gcm(_POOL_PROVIDER, b"warm") == want
        jobs = engine.figures["jobs"]
        items = [bytes([i]) * (16 + i) for i in range(8)]
        with multiprocessing.get_context(method).Pool(2) as pool:
            results = pool.map(_pool_work, items)
        for data, (answer, counters) in zip(items, results, strict=True):
            assert answer == ref_aead.AESGCM(GCM_KEY).encrypt(NONCE, data, b"aad")
            if method == "fork":
                # The inherited engine declined; software answered in the child.
                assert counters[engine.name]["aes-128-gcm"]["declined"].get("no-device", 0) >= 1
        # No worker's op reached the parent's ring.
        assert engine.figures["jobs"] == jobs
        assert gcm(_POOL_PROVIDER, b"after") == ref_aead.AESGCM(GCM_KEY).encrypt(
            NONCE, b"after", b"aad"
        )
    finally:
        _POOL_PROVIDER.close()
        _POOL_PROVIDER = None


def test_pkcs11_child_logs_in_again_and_answers_right_and_the_parent_keeps_its_sessions():
    import softhsm

    if softhsm.why_missing():
        pytest.skip(softhsm.why_missing())
    token = softhsm.shared()
    provider = Provider([token.spec], policy=TAKE_ALL)
    engine = provider.engines[0]
    try:
        token_key = engine.generate_key("aes", label=f"fork-{os.urandom(4).hex()}", bits=256)
        data = b"before and after fork"
        before = gcm(provider, data)  # a caller key imported, sessions opened, logged in
        sealed = AESGCM(token_key, provider=provider).encrypt(NONCE, data, None)

        def child() -> tuple[bytes, bytes, dict, dict]:
            got = gcm(provider, data)  # aes-128-gcm: a caller key, imported again
            opened = AESGCM(token_key, provider=provider).decrypt(NONCE, sealed, None)
            return (
                got,
                opened,
                cell(provider, engine.name),
                cell(provider, engine.name, "aes-256-gcm"),
            )

        got, opened, caller_cell, token_cell = in_child(child)
        assert got == before and opened == data
        # One op before the fork and one in the child each, all on the token (its own login).
        assert caller_cell["ops"] == 2 and caller_cell["faults"] == 0
        assert token_cell["ops"] == 2 and token_cell["faults"] == 0
        # The parent's sessions, login and imported keys were not touched by the child.
        assert gcm(provider, data) == before
        assert AESGCM(token_key, provider=provider).decrypt(NONCE, sealed, None) == data
        assert (
            cell(provider, engine.name)["ops"] == 2 and cell(provider, engine.name)["faults"] == 0
        )
    finally:
        provider.close()
