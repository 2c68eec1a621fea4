"""The AF_ALG engine's socket handling without AF_ALG: stand-in transform and operation sockets.

As in benchmarks/afalg_python_cost.py, stand-ins go where the kernel's sockets would be
(``engine._tfm``, ``engine._local``), so the hot path, its socket tables, engine-held hash
streams and the splice path run on any machine. The stand-ins compute with `cryptography` and
hashlib, so answers are checked too, not just the calls.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import hmac as std_hmac
import os
import socket

import pytest
from cryptography.hazmat.primitives import cmac as std_cmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from cryptoffload import Provider, _stream
from cryptoffload.cmac import CMAC
from cryptoffload.engines import _splice, afalg
from cryptoffload.engines.base import Capabilities
from cryptoffload.errors import Unavailable
from cryptoffload.hashes import SHA256, Hash
from cryptoffload.hmac import HMAC
from cryptoffload.ops import CipherOp, HashOp

MSG_MORE = socket.MSG_MORE
KEY = bytes(range(16))
IV = bytes(range(16, 32))


class CipherSocket:
    """An skcipher operation socket: sendmsg_afalg then recv, AES computed by `cryptography`.

    With ``pipe_fds`` it also takes spliced input: fileno() is the pipe's write end and recv
    reads the request back from its read end.
    """

    def __init__(self, alg: str, key: bytes, fail: BaseException | None = None) -> None:
        self.mode = alg.rsplit("-", 1)[1]
        self.key = key
        self.fail = fail
        self.calls: list[dict] = []
        self.pending = b""
        self.closed = False
        self.pipe_fds: tuple[int, int] | None = None

    def sendmsg_afalg(self, msg=None, *, op, iv=None, assoclen=None, flags=0) -> int:
        assert not self.closed
        data = b"".join(bytes(m) for m in msg or [])
        self.calls.append({"op": op, "iv": iv, "flags": flags, "len": len(data)})
        self.pending += data
        self.op, self.iv = op, iv
        return len(data)

    def fileno(self) -> int:
        assert self.pipe_fds is not None, "only a splicing test asks for the descriptor"
        return self.pipe_fds[1]

    def recv(self, n: int) -> bytes:
        if self.fail is not None:
            raise self.fail
        while self.pipe_fds is not None and len(self.pending) < n:
            self.pending += os.read(self.pipe_fds[0], n - len(self.pending))
        data, self.pending = self.pending[:n], self.pending[n:]
        mode = modes.ECB() if self.mode == "ecb" else getattr(modes, self.mode.upper())(self.iv)
        cipher = Cipher(algorithms.AES(self.key), mode)
        ctx = cipher.encryptor() if self.op == afalg._ENCRYPT else cipher.decryptor()
        return ctx.update(data) + ctx.finalize()

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


class Transform:
    """A transform socket: accept() gives an operation socket (or raises ``accept_error``)."""

    def __init__(self, alg: str, key: bytes | None) -> None:
        self.alg = alg
        self.key = key
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
        elif alg.startswith("hmac-"):
            sock = HashSocket(self, std_hmac.new(self.key, digestmod=alg[5:]))
        elif alg.startswith("cmac-"):
            sock = HashSocket(self, std_cmac.CMAC(algorithms.AES(self.key)))
        else:
            sock = HashSocket(self, hashlib.new(alg))
        self.accepted.append(sock)
        return sock, None

    def close(self) -> None:
        pass


def stand_in_engine(*algs: str, **kw) -> afalg.AfalgEngine:
    """An engine bound to ``algs`` whose transforms are stand-ins (one per algorithm and key)."""
    engine = afalg.AfalgEngine(driver="stand-in", **kw)
    for alg in algs:
        engine._bind[alg] = (afalg.KERNEL_NAMES[alg][0], "stand-in")
    tfms: dict = {}

    def tfm(alg, key, authsize=None):
        return tfms.setdefault((alg, key), Transform(alg, key))

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
    assert first.closed and pipe.closed and "pipe" not in engine._local.__dict__
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
    assert ("aes-128-cbc", KEY) not in engine._local.__dict__.get("fast", {})


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


def test_large_cipher_requests_go_through_the_operation_socket_table():
    engine = stand_in_engine("aes-128-cbc")
    data = os.urandom(afalg.MAX_REQUEST * 2 + 32)
    assert engine.run(cipher_op(data)) == cbc(data)
    tfm = engine._tfm("aes-128-cbc", KEY)
    assert list(engine._local.ops) == [tfm] and engine._local.current is tfm


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
    engine._discard_current()
    assert third.closed and engine._local.ops == {} and engine._local.current is None


def test_close_closes_the_transforms_and_this_threads_sockets_and_pipe():
    engine = stand_in_engine("aes-128-cbc")
    engine.run(cipher_op(bytes(16)))
    fast = engine._local.fast[("aes-128-cbc", KEY)]
    op_sock = engine._op_socket(Transform("aes-128-cbc", KEY))
    engine._local.pipe = pipe = _FakePipe()
    engine.close()
    assert fast.closed and op_sock.closed and pipe.closed
    assert not {"fast", "ops", "pipe"} & set(engine._local.__dict__)
    assert engine.run(cipher_op(b"z" * 16)) == cbc(b"z" * 16)  # usable again, anew


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
    assert ("pipe" in engine._local.__dict__) is spliced
    engine.close()
    assert "pipe" not in engine._local.__dict__


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
        assert sock.closed and closes == [1] and "pipe" not in engine._local.__dict__
    finally:
        os.close(read_fd)
        os.close(write_fd)
