"""The AF_ALG engine's socket handling without AF_ALG: stand-in transform and operation sockets.

As in benchmarks/afalg_python_cost.py, stand-ins go where the kernel's sockets would be
(``engine._tfm``, ``engine._local``), so the hot path, its socket tables, AEAD and GMAC requests,
engine-held hash streams and the splice path run on any machine. The stand-ins compute with
`cryptography` and hashlib, so answers are checked too, not just the calls.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import hmac as std_hmac
import os
import socket
import threading

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.decrepit.ciphers.algorithms import CAST5, Blowfish, Camellia, TripleDES
from cryptography.hazmat.primitives import cmac as std_cmac
from cryptography.hazmat.primitives.ciphers import Cipher, aead, algorithms, modes

from cryptoffload import Policy, Provider, _stream
from cryptoffload import aead as our_aead
from cryptoffload import modes as our_modes
from cryptoffload.ciphers import Cipher as OurCipher
from cryptoffload.cmac import CMAC
from cryptoffload.core.names import HASH_NAMES
from cryptoffload.core.ops import AeadOp, CipherOp, HashOp, MacOp, RngOp
from cryptoffload.drbg import Drbg
from cryptoffload.engines import _splice, afalg
from cryptoffload.engines.base import Capabilities
from cryptoffload.errors import Unavailable
from cryptoffload.hashes import SHA256, Hash
from cryptoffload.hmac import HMAC

MSG_MORE = socket.MSG_MORE
KEY = bytes(range(16))
IV = bytes(range(16, 32))
#: The kernel's block ciphers other than AES that the stand-in computes, by our names' prefix.
BLOCK_CIPHERS = {"3des": TripleDES, "camellia": Camellia, "blowfish": Blowfish, "cast5": CAST5}


class CipherSocket:
    """An skcipher operation socket: sendmsg_afalg then recv, AES computed by `cryptography`.

    With ``pipe_fds`` it also takes spliced input: fileno() is the pipe's write end and recv
    reads the request back from its read end.
    """

    def __init__(self, alg: str, key: bytes, fail: BaseException | None = None) -> None:
        self.alg = alg
        self.mode = alg.rsplit("-", 1)[-1]
        self.block = 8 if alg.split("-")[0] in ("3des", "blowfish", "cast5") else 16
        self.key = key
        self.fail = fail
        self.calls: list[dict] = []
        self.pending = b""
        self.closed = False
        self.pipe_fds: tuple[int, int] | None = None

    def sendmsg_afalg(self, msg=None, *, op, iv=None, assoclen=None, flags=0) -> int:
        assert not self.closed
        if iv is not None and len(iv) != (0 if self.mode == "ecb" else self.block):
            raise OSError(errno.EINVAL, "the IV must be as long as the mode's")  # as af_alg
        data = b"".join(bytes(m) for m in msg or [])
        self.calls.append({"op": op, "iv": iv, "flags": flags, "len": len(data)})
        self.pending += data
        self.op, self.iv = op, iv
        return len(data)

    #: Deliver results to recv_into in reads of at most this many bytes (a kernel may).
    read_at_most: int | None = None
    _ready = b""

    def recv_into(self, buf, nbytes: int = 0) -> int:
        nbytes = nbytes or len(buf)
        if not self._ready:
            self._ready = self.recv(len(self.pending))
        take = min(nbytes, self.read_at_most or nbytes, len(self._ready))
        buf[:take] = self._ready[:take]
        self._ready = self._ready[take:]
        return take

    def fileno(self) -> int:
        assert self.pipe_fds is not None, "only a splicing test asks for the descriptor"
        return self.pipe_fds[1]

    def recv(self, n: int) -> bytes:
        if self.fail is not None:
            raise self.fail
        while self.pipe_fds is not None and len(self.pending) < n:
            self.pending += os.read(self.pipe_fds[0], n - len(self.pending))
        data, self.pending = self.pending[:n], self.pending[n:]
        if self.alg == "chacha20":
            cipher = Cipher(algorithms.ChaCha20(self.key, self.iv), None)
        else:
            mode_class = getattr(our_modes, self.mode.upper())  # CFB and OFB from `decrepit`
            mode = mode_class() if self.mode == "ecb" else mode_class(self.iv)
            family = BLOCK_CIPHERS.get(self.alg.split("-")[0], algorithms.AES)
            cipher = Cipher(family(self.key), mode)
        ctx = cipher.encryptor() if self.op == afalg._ENCRYPT else cipher.decryptor()
        return ctx.update(data) + ctx.finalize()

    def close(self) -> None:
        self.closed = True


class AeadSocket:
    """An algif_aead operation socket: the request (AAD, then the plaintext, or the ciphertext
    and tag) goes in with sendmsg_afalg; recv gives the AAD back followed by the answer, computed
    by `cryptography`. A failed tag check is EBADMSG on recv, as the kernel reports it."""

    def __init__(self, alg: str, key: bytes, authsize: int) -> None:
        self.alg = alg
        self.key = key
        self.authsize = authsize
        self.calls: list[dict] = []
        self.answer = b""
        self.closed = False

    def sendmsg_afalg(self, msg=None, *, op, iv=None, assoclen=None, flags=0) -> int:
        assert not self.closed and not flags and iv is not None and assoclen is not None
        buffers = list(msg or [])  # kept as given: tests check that nothing was joined
        self.calls.append({"op": op, "iv": iv, "assoclen": assoclen, "buffers": buffers})
        self.request = b"".join(bytes(b) for b in buffers)
        self.op, self.iv, self.assoclen = op, iv, assoclen
        return len(self.request)

    def recv(self, n: int) -> bytes:
        aad, body, t = self.request[: self.assoclen], self.request[self.assoclen :], self.authsize
        encrypt = self.op == afalg._ENCRYPT
        try:
            if self.alg == "chacha20-poly1305":
                chacha = aead.ChaCha20Poly1305(self.key)
                fn = chacha.encrypt if encrypt else chacha.decrypt
                answer = fn(self.iv, body, aad)
            elif self.alg.endswith("-ccm"):
                nonce = self.iv[1 : 15 - self.iv[0]]  # the counter block's flags say L
                ccm = aead.AESCCM(self.key, tag_length=t)
                answer = ccm.encrypt(nonce, body, aad) if encrypt else ccm.decrypt(nonce, body, aad)
            elif encrypt:  # gcm(aes), GMAC included
                ctx = Cipher(algorithms.AES(self.key), modes.GCM(self.iv)).encryptor()
                ctx.authenticate_additional_data(aad)
                answer = ctx.update(body) + ctx.finalize() + ctx.tag[:t]
            else:
                mode = modes.GCM(self.iv, body[len(body) - t :], min_tag_length=t)
                ctx = Cipher(algorithms.AES(self.key), mode).decryptor()
                ctx.authenticate_additional_data(aad)
                answer = ctx.update(body[: len(body) - t]) + ctx.finalize()
        except InvalidTag:
            raise OSError(errno.EBADMSG, "Bad message") from None
        self.answer = aad + answer
        if n < len(self.answer):
            raise OSError(errno.EINVAL, "the receive buffer cannot hold the AAD and the answer")
        return self.answer

    def close(self) -> None:
        self.closed = True


class HashSocket:
    """An algif_hash operation socket: updates with MSG_MORE, the digest after a final send,
    and accept() exporting the partial state into a new socket."""

    def __init__(self, owner: Transform, state) -> None:
        self.owner = owner
        self.state = state
        self.result = b""
        self.closed = False
        owner.children.append(self)

    def sendall(self, data, flags: int = 0) -> None:
        self._send(data, flags)

    def send(self, data, flags: int = 0) -> int:
        self._send(data, flags)
        return len(data)

    def _send(self, data, flags: int) -> None:
        assert not self.closed
        self.owner.flags.append(flags)
        if self.owner.fail_send is not None and self.owner.sends == self.owner.fail_send:
            self.owner.sends += 1
            raise OSError(errno.EIO, "stand-in device error")
        self.owner.sends += 1
        self.state.update(bytes(data))
        if not flags & MSG_MORE:
            final = getattr(self.state, "finalize", None)
            self.result = final() if final else self.state.digest()

    def recv(self, n: int) -> bytes:
        return self.result[:n]

    def accept(self):
        return HashSocket(self.owner, self.state.copy()), None

    def close(self) -> None:
        self.closed = True


class RngSocket:
    """An algif_rng operation socket: recv gives random bytes (at most 128 per call, as stdrng)."""

    def __init__(self) -> None:
        self.closed = False

    def recv(self, n: int) -> bytes:
        return os.urandom(min(n, 128))

    def close(self) -> None:
        self.closed = True


class Transform:
    """A transform socket: accept() gives an operation socket (or raises ``accept_error``)."""

    def __init__(self, alg: str, key: bytes | None, authsize: int | None = None) -> None:
        self.alg = alg
        self.key = key
        self.authsize = authsize
        self.accepted: list = []
        self.children: list[HashSocket] = []
        self.flags: list[int] = []
        self.sends = 0
        self.fail_send: int | None = None
        self.accept_error: OSError | None = None

    def accept(self):
        if self.accept_error is not None:
            raise self.accept_error
        alg = self.alg
        if afalg.KERNEL_NAMES[alg][0] == "skcipher":
            sock = CipherSocket(alg, self.key)
        elif afalg.KERNEL_NAMES[alg][0] == "aead":
            sock = AeadSocket(alg, self.key, self.authsize)
        elif alg == "drbg":
            sock = RngSocket()
        elif alg.startswith("hmac-"):
            sock = HashSocket(self, std_hmac.new(self.key, digestmod=HASH_NAMES[alg[5:]]))
        elif alg.startswith("cmac-"):
            block = TripleDES(self.key) if alg == "cmac-3des" else algorithms.AES(self.key)
            sock = HashSocket(self, std_cmac.CMAC(block))
        else:
            sock = HashSocket(self, hashlib.new(HASH_NAMES[alg]))
        self.accepted.append(sock)
        return sock, None

    def close(self) -> None:
        pass


def stand_in_engine(*algs: str, **kw) -> afalg.AfalgEngine:
    """An engine bound to ``algs`` whose transforms are stand-ins: one per algorithm and key,
    and AEAD tag length, in ``engine.tfms`` by (alg, key) or (alg, key, tag length)."""
    engine = afalg.AfalgEngine(driver="stand-in", **kw)
    for alg in algs:
        engine._bind[alg] = (afalg.KERNEL_NAMES[alg][0], "stand-in")
    tfms: dict = {}

    def tfm(alg, key, authsize=None):
        ident = (alg, key) if authsize is None else (alg, key, authsize)
        return tfms.setdefault(ident, Transform(alg, key, authsize))

    engine._tfm = tfm
    engine.tfms = tfms
    engine.probe = lambda: Capabilities(True, "", frozenset(algs))
    return engine


def cbc(data: bytes, key: bytes = KEY) -> bytes:
    enc = Cipher(algorithms.AES(key), modes.CBC(IV)).encryptor()
    return enc.update(data) + enc.finalize()


def cipher_op(data, key: bytes = KEY, alg: str = "aes-128-cbc") -> CipherOp:
    return CipherOp(alg, "encrypt", key, None if alg.endswith("ecb") else IV, data)


# -- the cipher hot path ---------------------------------------------------------------------------


def test_hot_path_keeps_one_operation_socket_per_algorithm_and_key():
    engine = stand_in_engine("aes-128-cbc", "aes-128-ecb")
    other = bytes(16)
    for _ in range(3):
        assert engine.run(cipher_op(b"a" * 32)) == cbc(b"a" * 32)
        assert engine.run(cipher_op(b"b" * 32, other)) == cbc(b"b" * 32, other)
        engine.run(cipher_op(b"c" * 32, alg="aes-128-ecb"))
    assert set(engine._local.fast) == {
        ("aes-128-cbc", KEY),
        ("aes-128-cbc", other),
        ("aes-128-ecb", KEY),
    }
    assert all(len(t.accepted) == 1 for t in engine.tfms.values())


def test_hot_path_table_is_bounded_and_closes_the_sockets_it_drops(monkeypatch):
    monkeypatch.setattr(afalg, "MAX_TFMS", 3)
    engine = stand_in_engine("aes-128-cbc")
    keys = [bytes([i]) * 16 for i in range(4)]
    socks = []
    for key in keys:
        engine.run(cipher_op(bytes(16), key))
        socks.append(engine._local.fast[("aes-128-cbc", key)])
    assert [s.closed for s in socks] == [True, True, True, False]
    assert list(engine._local.fast) == [("aes-128-cbc", keys[3])]


@pytest.mark.parametrize(
    ("error", "raised"),
    [
        (OSError(errno.EBUSY, "busy"), Unavailable),
        (OSError(errno.EIO, "device error"), OSError),
        (Unavailable("fault", "short read"), Unavailable),
        (KeyboardInterrupt(), KeyboardInterrupt),
    ],
    ids=["EBUSY", "EIO", "short-read", "interrupt"],
)
def test_a_request_that_fails_half_way_discards_its_socket_and_the_next_op_starts_anew(
    error, raised
):
    # A socket left holding a request would have the next one appended to it (on older kernels
    # with the new IV over the old data): whatever the exception, the socket must go.
    engine = stand_in_engine("aes-128-cbc")
    engine.run(cipher_op(bytes(16)))
    first = engine._local.fast[("aes-128-cbc", KEY)]
    first.fail = error
    engine._local.pipe = pipe = _FakePipe()
    with pytest.raises(raised):
        engine.run(cipher_op(b"x" * 32))
    assert first.closed and pipe.closed and engine._local.pipe is None
    assert ("aes-128-cbc", KEY) not in engine._local.fast
    assert engine.run(cipher_op(b"y" * 32)) == cbc(b"y" * 32)
    assert engine._local.fast[("aes-128-cbc", KEY)] is not first


class _FakePipe:
    closed = False

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("code", "raised"), [(errno.EBUSY, Unavailable), (errno.EIO, OSError)], ids=["EBUSY", "EIO"]
)
def test_accept_failing_on_the_hot_path_is_mapped_like_any_socket_error(code, raised):
    engine = stand_in_engine("aes-128-cbc")
    engine._tfm("aes-128-cbc", KEY).accept_error = OSError(code, os.strerror(code))
    with pytest.raises(raised) as info:
        engine.run(cipher_op(bytes(16)))
    if raised is Unavailable:
        assert info.value.reason == "busy"
    assert ("aes-128-cbc", KEY) not in engine._local.fast


def test_unbound_algorithms_are_declined_on_every_path():
    engine = stand_in_engine("aes-128-cbc")
    for op in (
        cipher_op(bytes(16), alg="aes-128-ecb"),
        cipher_op(bytes(afalg.MAX_REQUEST + 16), alg="aes-128-ecb"),
        HashOp("sha256", "digest", b"abc"),
    ):
        with pytest.raises(Unavailable) as info:
            engine.run(op)
        assert info.value.reason == "unsupported"


@pytest.mark.parametrize("mode", ["cbc", "ctr", "ecb", "chacha20"])
def test_large_cipher_requests_are_split_chained_and_go_through_the_operation_socket_table(mode):
    alg = "chacha20" if mode == "chacha20" else f"aes-128-{mode}"
    key = KEY * 2 if mode == "chacha20" else KEY
    engine = stand_in_engine(alg)
    data = os.urandom(afalg.MAX_REQUEST * 2 + 32)
    iv = None if mode == "ecb" else IV
    if mode == "chacha20":
        iv = (2**32 - 2049).to_bytes(4, "little") + IV[4:]  # near the top: no wrap inside
        ref = Cipher(algorithms.ChaCha20(key, iv), None)
    else:
        ref = Cipher(
            algorithms.AES(key), modes.ECB() if iv is None else getattr(modes, mode.upper())(iv)
        )
    sealed = engine.run(CipherOp(alg, "encrypt", key, iv, data))
    assert sealed == ref.encryptor().update(data)
    assert engine.run(CipherOp(alg, "decrypt", key, iv, bytearray(sealed))) == data
    tfm = engine._tfm(alg, key)
    assert list(engine._local.ops) == [tfm] and engine._local.current is tfm
    sock = engine._local.ops[tfm]
    assert [c["len"] for c in sock.calls] == [afalg.MAX_REQUEST, afalg.MAX_REQUEST, 32] * 2
    assert engine._local.fast == {}  # the hot path's table is not involved


def test_large_requests_of_modes_that_cannot_be_chained_here_are_declined():
    engine = stand_in_engine("aes-128-cfb")
    with pytest.raises(Unavailable) as info:
        engine.run(cipher_op(bytes(afalg.MAX_REQUEST + 16), alg="aes-128-cfb"))
    assert info.value.reason == "too-large"


def test_operation_socket_table_is_keyed_by_transform_bounded_and_discards_the_current(
    monkeypatch,
):
    monkeypatch.setattr(afalg, "MAX_TFMS", 2)
    engine = stand_in_engine("aes-128-cbc")
    tfms = [Transform("aes-128-cbc", bytes([i]) * 16) for i in range(3)]
    socks = [engine._op_socket(t) for t in tfms[:2]]
    assert engine._op_socket(tfms[0]) is socks[0]
    third = engine._op_socket(tfms[2])
    assert socks[0].closed and socks[1].closed and list(engine._local.ops) == [tfms[2]]
    engine._local.discard_current()
    assert third.closed and engine._local.ops == {} and engine._local.current is None


def test_close_closes_the_transforms_and_this_threads_sockets_and_pipe():
    engine = stand_in_engine("aes-128-cbc")
    engine.run(cipher_op(bytes(16)))
    fast = engine._local.fast[("aes-128-cbc", KEY)]
    op_sock = engine._op_socket(Transform("aes-128-cbc", KEY))
    engine._local.pipe = pipe = _FakePipe()
    engine.close()
    assert fast.closed and op_sock.closed and pipe.closed
    local = engine._local
    assert local.fast == {} and local.ops == {} and local.pipe is None and local.current is None
    assert engine.run(cipher_op(b"z" * 16)) == cbc(b"z" * 16)  # usable again, anew


def test_each_thread_has_its_own_operation_sockets():
    engine = stand_in_engine("aes-128-cbc")
    engine.run(cipher_op(bytes(16)))
    mine = engine._local.fast[("aes-128-cbc", KEY)]
    seen: dict = {}

    def other_thread() -> None:
        seen["fresh"] = engine._local.fast == {} and engine._local.pipe is None
        seen["answer"] = engine.run(cipher_op(b"t" * 32))
        seen["sock"] = engine._local.fast[("aes-128-cbc", KEY)]

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    assert seen["fresh"] and seen["answer"] == cbc(b"t" * 32)
    assert seen["sock"] is not mine and engine._local.fast == {("aes-128-cbc", KEY): mine}
    assert len(engine.tfms[("aes-128-cbc", KEY)].accepted) == 2


# -- AEAD and GMAC: one request, AAD and payload as separate buffers, one buffer back ------------

NONCE = bytes(range(40, 52))
AEAD_CASES = [
    ("aes-128-gcm", 16),
    ("aes-128-gcm", 12),
    ("aes-128-gcm", 8),
    ("aes-128-gcm", 4),
    ("aes-256-gcm", 16),
    ("aes-128-ccm", 16),
    ("aes-128-ccm", 8),
    ("aes-256-ccm", 8),
]


def aead_key(alg: str) -> bytes:
    return bytes(range(int(alg.split("-")[1]) // 8))


def sealed_by_cryptography(alg: str, nonce: bytes, data, aad, tag_length: int) -> bytes:
    key = aead_key(alg)
    if alg.endswith("-ccm"):
        return aead.AESCCM(key, tag_length=tag_length).encrypt(nonce, bytes(data), aad)
    sealed = aead.AESGCM(key).encrypt(nonce, bytes(data), aad)  # a GCM tag cut short is a prefix
    return sealed[: len(sealed) - 16 + tag_length]


def aead_op(alg: str, kind: str, data, aad, tag_length: int, nonce: bytes = NONCE) -> AeadOp:
    return AeadOp(alg, kind, aead_key(alg), nonce, data, aad, tag_length)


@pytest.mark.parametrize(("alg", "tag_length"), AEAD_CASES)
@pytest.mark.parametrize(
    "aad", [None, b"header", bytearray(b"a" * 40)], ids=["no-aad", "aad", "aad-bytearray"]
)
def test_aead_through_the_engine_gives_cryptographys_ciphertext_and_tag_in_one_buffer(
    alg, tag_length, aad
):
    engine = stand_in_engine(alg)
    for data in (b"", b"x", os.urandom(100), bytearray(os.urandom(4096))):
        sealed = engine.run(aead_op(alg, "encrypt", data, aad, tag_length))
        assert type(sealed) is bytes
        assert sealed == sealed_by_cryptography(alg, NONCE, data, aad, tag_length)
        if not data and not aad:
            continue  # declined: see the test below
        opened = engine.run(aead_op(alg, "decrypt", sealed, aad, tag_length))
        assert type(opened) is bytes and opened == data


@pytest.mark.parametrize("nonce_length", [7, 13])
def test_ccm_nonces_of_every_length_reach_the_kernel_in_its_counter_block(nonce_length):
    engine = stand_in_engine("aes-128-ccm")
    nonce, data = bytes(range(nonce_length)), os.urandom(50)
    sealed = engine.run(aead_op("aes-128-ccm", "encrypt", data, b"aad", 8, nonce))
    assert sealed == sealed_by_cryptography("aes-128-ccm", nonce, data, b"aad", 8)
    assert engine.run(aead_op("aes-128-ccm", "decrypt", sealed, b"aad", 8, nonce)) == data


@pytest.mark.parametrize(("alg", "tag_length"), AEAD_CASES)
@pytest.mark.parametrize("where", ["tag", "ciphertext", "aad"])
def test_an_altered_aead_message_raises_invalid_tag_and_the_socket_is_replaced(
    alg, tag_length, where
):
    engine = stand_in_engine(alg)
    data, aad = os.urandom(64), b"header"
    sealed = bytearray(engine.run(aead_op(alg, "encrypt", data, aad, tag_length)))
    if where == "aad":
        aad = b"Header"
    else:
        sealed[-1 if where == "tag" else 0] ^= 1
    with pytest.raises(InvalidTag):
        engine.run(aead_op(alg, "decrypt", bytes(sealed), aad, tag_length))
    tfm = engine.tfms[(alg, aead_key(alg), tag_length)]
    assert tfm.accepted[0].closed and engine._local.ops == {}
    sealed = engine.run(aead_op(alg, "encrypt", data, aad, tag_length))
    assert engine.run(aead_op(alg, "decrypt", sealed, aad, tag_length)) == data
    assert len(tfm.accepted) == 2


def test_aead_decrypt_with_neither_data_nor_aad_is_declined_unsent():
    # The kernel's answer would be empty, so no read could carry EBADMSG: software checks.
    engine = stand_in_engine("aes-128-gcm")
    tag = sealed_by_cryptography("aes-128-gcm", NONCE, b"", None, 16)
    with pytest.raises(Unavailable) as info:
        engine.run(aead_op("aes-128-gcm", "decrypt", tag, None, 16))
    assert info.value.reason == "unsupported"
    assert all(not sock.calls for sock in engine.tfms[("aes-128-gcm", KEY, 16)].accepted)


def test_aead_buffers_go_to_the_kernel_unjoined_and_its_answer_comes_back_as_it_gave_it():
    engine = stand_in_engine("aes-128-gcm")
    data, aad = bytearray(os.urandom(256)), bytearray(b"header")
    sealed = engine.run(aead_op("aes-128-gcm", "encrypt", data, None, 16))
    sock = engine._local.ops[engine.tfms[("aes-128-gcm", KEY, 16)]]
    call = sock.calls[-1]
    assert sealed is sock.answer  # no AAD: not sliced, not copied
    assert len(call["buffers"]) == 1 and call["buffers"][0] is data and call["assoclen"] == 0
    assert engine.run(aead_op("aes-128-gcm", "decrypt", sealed, None, 16)) is sock.answer
    assert sock.calls[-1]["buffers"][0] is sealed  # the ciphertext and its tag as given
    sealed = engine.run(aead_op("aes-128-gcm", "encrypt", data, aad, 16))
    assert sealed == sock.answer[len(aad) :]
    for kind, payload in (("encrypt", data), ("decrypt", sealed)):
        engine.run(aead_op("aes-128-gcm", kind, payload, aad, 16))
        call = sock.calls[-1]
        assert [id(b) for b in call["buffers"]] == [id(aad), id(payload)]
        assert call["assoclen"] == len(aad)


def test_aead_through_a_provider_uses_the_engine_for_every_op():
    engine = stand_in_engine("aes-128-gcm", "aes-128-ccm")
    provider = Provider([engine], policy=Policy(min_size={"*": 0}))
    key, data = aead_key("aes-128-gcm"), os.urandom(100)
    for ours, alg in (
        (our_aead.AESGCM(key, tag_length=8, provider=provider), "aes-128-gcm"),
        (our_aead.AESCCM(key, tag_length=8, provider=provider), "aes-128-ccm"),
    ):
        sealed = ours.encrypt(NONCE, data, b"header")
        assert sealed == sealed_by_cryptography(alg, NONCE, data, b"header", 8)
        assert ours.decrypt(NONCE, sealed, b"header") == data
        with pytest.raises(InvalidTag):
            ours.decrypt(NONCE, sealed[:-1] + bytes([sealed[-1] ^ 1]), b"header")
        assert _cell(provider, engine.name, alg)["ops"] == 3
    assert provider.counters.snapshot()["software"] == {}


@pytest.mark.parametrize("tag_length", [16, 12, 8, 4])
def test_gmac_sends_the_message_as_aad_and_returns_the_tag(tag_length):
    engine = stand_in_engine("gmac-aes-128")
    for data in (b"", b"abc", bytearray(os.urandom(1000))):
        tag = engine.run(MacOp("gmac-aes-128", "mac", KEY, data, NONCE, tag_length))
        assert tag == aead.AESGCM(KEY).encrypt(NONCE, b"", bytes(data))[:tag_length]
        call = engine._local.ops[engine.tfms[("gmac-aes-128", KEY, tag_length)]].calls[-1]
        assert call["buffers"][0] is data and call["assoclen"] == len(data)


# -- the kernel's RNG ------------------------------------------------------------------------------


def test_kernel_rng_answers_seed_ops_and_seeds_the_drbg():
    # An rng op carries no data: the engine must not read fields its family does not have.
    engine = stand_in_engine("drbg")
    assert len(engine.run(RngOp("drbg", "seed", 300))) == 300
    provider = Provider([engine], policy=Policy(min_size={"*": 0}))
    d = Drbg(provider=provider)
    assert len(d.random_bytes(64)) == 64
    assert d.seed_sources == ["os", engine.name]


# -- hashes and MACs held by the engine (open_stream) ---------------------------------------------


@pytest.fixture
def small_gather(monkeypatch):
    monkeypatch.setattr(_stream, "GATHER_LIMIT", 4096)
    monkeypatch.setattr(_stream, "RETAIN_LIMIT", 1 << 20)


def _cell(provider: Provider, engine: str, alg: str) -> dict:
    return provider.counters.snapshot().get(engine, {}).get(alg, {})


@pytest.mark.usefixtures("small_gather")
def test_long_hash_hmac_and_cmac_stream_through_the_kernel_socket_and_fork_by_accept():
    engine = stand_in_engine("sha256", "hmac-sha256", "cmac-aes-128")
    provider = Provider([engine])
    message = os.urandom(afalg.MAX_REQUEST + 5000)  # one update split in two requests
    h = Hash(SHA256(), provider=provider)
    h.update(message[:100])  # gathered, then sent with the rest when the stream opens
    h.update(message[100:])
    twin = h.copy()
    twin.update(b"tail")
    assert h.finalize() == hashlib.sha256(message).digest()
    assert twin.finalize() == hashlib.sha256(message + b"tail").digest()
    mac = HMAC(KEY, SHA256(), provider=provider)
    mac.update(message)
    mac.verify(std_hmac.new(KEY, message, "sha256").digest())
    c = CMAC(algorithms.AES(KEY), provider=provider)
    c.update(message)
    ref = std_cmac.CMAC(algorithms.AES(KEY))
    ref.update(message)
    assert c.finalize() == ref.finalize()
    tfm = engine.tfms[("sha256", None)]
    assert all(flags == MSG_MORE for flags in tfm.flags[:-2]) and tfm.flags[-1] == 0
    assert all(sock.closed for t in engine.tfms.values() for sock in t.children)
    assert _cell(provider, engine.name, "sha256")["ops"] == 2
    assert _cell(provider, engine.name, "hmac-sha256")["ops"] == 1
    assert _cell(provider, engine.name, "cmac-aes-128")["ops"] == 1
    assert provider.counters.snapshot()["software"] == {}


@pytest.mark.usefixtures("small_gather")
@pytest.mark.parametrize("at", [0, 1, 3], ids=["first-send", "mid-stream", "final-send"])
def test_kernel_stream_fault_is_redone_in_software_and_its_socket_closed(at):
    engine = stand_in_engine("sha256")
    provider = Provider([engine])
    engine._tfm("sha256", None).fail_send = at
    h = Hash(SHA256(), provider=provider)
    message = os.urandom(afalg.MAX_REQUEST + 8192)
    for start in range(0, len(message), 8192):
        h.update(message[start : start + 8192])
    assert h.finalize() == hashlib.sha256(message).digest()
    assert all(sock.closed for sock in engine.tfms[("sha256", None)].children)
    assert _cell(provider, engine.name, "sha256")["faults"] == 1
    assert _cell(provider, "software", "sha256")["ops"] == 1


def test_short_hashes_still_run_as_one_request_on_the_operation_socket():
    engine = stand_in_engine("sha256")
    digest = engine.run(HashOp("sha256", "digest", b"abc"))
    assert digest == hashlib.sha256(b"abc").digest()
    sock = engine._local.ops[engine.tfms[("sha256", None)]]
    assert not sock.closed  # kept for the next request


@pytest.mark.parametrize(
    ("alg", "error", "reason"),
    [
        ("aes-128-cbc", None, "streaming"),
        ("gmac-aes-128", None, "streaming"),
        ("sha512", None, "unsupported"),
        ("sha256", OSError(errno.ENOMEM, "no memory"), "too-large"),
        ("sha256", OSError(errno.EBUSY, "busy"), "busy"),
    ],
)
def test_open_stream_declines_what_it_cannot_hold(alg, error, reason):
    engine = stand_in_engine("aes-128-cbc", "gmac-aes-128", "sha256")
    if error is not None:
        engine._tfm("sha256", None).accept_error = error
    with pytest.raises(Unavailable) as info:
        engine.open_stream(HashOp(alg, "digest", b""))
    assert info.value.reason == reason


def test_open_stream_socket_error_outside_the_declines_is_a_fault():
    engine = stand_in_engine("sha256")
    engine._tfm("sha256", None).accept_error = OSError(errno.EIO, "device error")
    with pytest.raises(OSError):
        engine.open_stream(HashOp("sha256", "digest", b""))


# -- splicing (off by default) ---------------------------------------------------------------------

needs_splice = pytest.mark.skipif(not _splice.AVAILABLE, reason="no vmsplice on this platform")


@pytest.fixture
def sink():
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        with contextlib.suppress(OSError):
            os.close(fd)


def splicing_engine() -> afalg.AfalgEngine:
    engine = stand_in_engine("aes-128-cbc", splice="always", splice_min=1024)
    engine._splice_algs = frozenset({"aes-128-cbc"})  # what probe() picks for "always"
    return engine


@needs_splice
@pytest.mark.parametrize(
    ("kind", "spliced"),
    [(bytes, True), (bytearray, True), (lambda b: memoryview(b).toreadonly(), False)],
    ids=["bytes", "bytearray", "read-only-view"],
)
def test_spliced_requests_give_the_sendmsg_answer(sink, kind, spliced):
    engine = splicing_engine()
    engine.run(cipher_op(bytes(16)))  # below splice_min: sendmsg
    sock = engine._local.fast[("aes-128-cbc", KEY)]
    sock.pipe_fds = sink
    for size in (1024, 20 * 1024, afalg.MAX_REQUEST):
        data = os.urandom(size)
        assert engine.run(cipher_op(kind(data))) == cbc(data)
        header = sock.calls[-1]
        if spliced:
            # The header goes alone with MSG_MORE; the data follows through the pipe.
            assert header["len"] == 0 and header["flags"] == MSG_MORE and header["iv"] == IV
        else:
            assert header["len"] == size and header["flags"] == 0
    assert (engine._local.pipe is not None) is spliced
    engine.close()
    assert engine._local.pipe is None


@needs_splice
def test_a_failed_splice_discards_the_socket_and_the_pipe():
    engine = splicing_engine()
    engine.run(cipher_op(bytes(16)))
    sock = engine._local.fast[("aes-128-cbc", KEY)]
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    sock.pipe_fds = (read_fd, write_fd)
    try:
        data = os.urandom(4096)
        assert engine.run(cipher_op(data)) == cbc(data)
        pipe = engine._local.pipe
        closes = []
        pipe.close = lambda close=pipe.close: (closes.append(1), close())
        sock.pipe_fds = (read_fd, -1)  # the socket's descriptor is bad: splice fails
        with pytest.raises(OSError) as info:
            engine.run(cipher_op(data))
        assert info.value.errno == errno.EBADF
        assert sock.closed and closes == [1] and engine._local.pipe is None
    finally:
        os.close(read_fd)
        os.close(write_fd)


@pytest.mark.parametrize("read_at_most", [None, 40], ids=["one-read", "short-reads"])
@pytest.mark.parametrize("mode", ["cbc", "ecb", "ctr"])
def test_cipher_ops_with_out_are_received_into_the_callers_buffer(mode, read_at_most, monkeypatch):
    monkeypatch.setattr(CipherSocket, "read_at_most", read_at_most)
    alg = f"aes-128-{mode}"
    engine = stand_in_engine(alg)
    iv = None if mode == "ecb" else IV
    ref = Cipher(
        algorithms.AES(KEY), modes.ECB() if iv is None else getattr(modes, mode.upper())(iv)
    )
    for size in (64, afalg.MAX_REQUEST * 2 + 32):  # the hot path, then split and chained
        data = os.urandom(size)
        buf = bytearray(b"\xee" * (size + 16))
        op = CipherOp(alg, "encrypt", KEY, iv, data, memoryview(buf))
        assert engine.run(op) == size
        assert bytes(buf[:size]) == ref.encryptor().update(data)
        assert buf[size:] == b"\xee" * 16


def test_update_into_through_the_engine_writes_the_kernels_answer_in_place():
    engine = stand_in_engine("aes-128-cbc")
    provider = Provider([engine], policy=Policy(min_size={"*": 0}))
    ours = OurCipher(algorithms.AES(KEY), modes.CBC(IV), provider=provider).encryptor()
    theirs = Cipher(algorithms.AES(KEY), modes.CBC(IV)).encryptor()
    buf = bytearray(4096 + 15)
    for _ in range(3):
        n = ours.update_into(b"p" * 4096, buf)
        assert bytes(buf[:n]) == theirs.update(b"p" * 4096)
    assert provider.counters.snapshot()[engine.name]["aes-128-cbc"]["ops"] == 3


# -- the kernel names of the algorithms added for drop-in use --------------------------------------

ADDED = {
    "aes-128-xts": lambda: CipherOp("aes-128-xts", "encrypt", KEY + IV, IV, bytes(range(40))),
    "aes-256-xts": lambda: CipherOp("aes-256-xts", "decrypt", KEY * 2 + IV * 2, IV, bytes(48)),
    "3des-cbc": lambda: CipherOp("3des-cbc", "encrypt", KEY + IV[:8], IV[:8], bytes(range(24))),
    "3des-ecb": lambda: CipherOp("3des-ecb", "decrypt", KEY + IV[:8], None, bytes(range(16))),
    "chacha20-poly1305": lambda: AeadOp(
        "chacha20-poly1305", "encrypt", KEY * 2, IV[:12], b"payload", b"header", 16
    ),
    "sha3-256": lambda: HashOp("sha3-256", "digest", b"message"),
    "sha3-512": lambda: HashOp("sha3-512", "digest", b"message"),
    "blake2b": lambda: HashOp("blake2b", "digest", b"message"),
    "sm3": lambda: HashOp("sm3", "digest", b"message"),
    "md5": lambda: HashOp("md5", "digest", b"message"),
    "hmac-sha3-384": lambda: MacOp("hmac-sha3-384", "mac", KEY, b"message"),
    "hmac-md5": lambda: MacOp("hmac-md5", "mac", KEY, b"message"),
    "hmac-sm3": lambda: MacOp("hmac-sm3", "mac", KEY, b"message"),
    "cmac-3des": lambda: MacOp("cmac-3des", "mac", KEY + IV[:8], b"message"),
    "chacha20": lambda: CipherOp("chacha20", "encrypt", KEY * 2, IV, bytes(range(100))),
    "camellia-192-cbc": lambda: CipherOp("camellia-192-cbc", "encrypt", KEY + IV[:8], IV, KEY),
    "camellia-256-ecb": lambda: CipherOp("camellia-256-ecb", "decrypt", KEY * 2, None, IV),
    "blowfish-cbc": lambda: CipherOp("blowfish-cbc", "encrypt", KEY, IV[:8], bytes(range(24))),
    "cast5-ecb": lambda: CipherOp("cast5-ecb", "decrypt", KEY, None, bytes(range(16))),
}


def test_the_added_algorithms_have_their_kernel_names():
    assert set(ADDED) <= set(afalg.KERNEL_NAMES)
    assert afalg.KERNEL_NAMES["aes-256-xts"] == ("skcipher", "xts(aes)")
    assert afalg.KERNEL_NAMES["chacha20-poly1305"] == ("aead", "rfc7539(chacha20,poly1305)")
    assert afalg.KERNEL_NAMES["blake2b"] == ("hash", "blake2b-512")
    assert afalg.KERNEL_NAMES["cmac-3des"] == ("hash", "cmac(des3_ede)")


@pytest.mark.parametrize("alg", list(ADDED))
def test_the_added_algorithms_answer_through_the_engine_as_software_does(alg):
    from cryptoffload.core.validate import validate_op
    from cryptoffload.engines.software import SoftwareEngine

    op = ADDED[alg]()
    validate_op(op)
    assert stand_in_engine(alg).run(op) == SoftwareEngine().run(op)
