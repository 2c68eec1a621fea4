"""The Linux kernel crypto API engine: AF_ALG sockets to whatever driver the kernel binds.

Spec strings: ``afalg`` (every algorithm whose kernel driver is hardware), ``afalg:any`` (the
kernel's choice, software drivers included: for tests and measurements), ``afalg:DRIVER`` (pin
one driver by name, e.g. ``afalg:cbc-aes-caam``, as kcapi-speed does).
"""

from __future__ import annotations

import collections
import errno
import os
import socket
import threading
import weakref
from typing import Any

from cryptography.exceptions import InvalidTag

from cryptoffload.blocks import ivs
from cryptoffload.engines import _fork, _splice, presence, procfs
from cryptoffload.engines.base import Capabilities
from cryptoffload.errors import BadEngineSpec, Unavailable

KERNEL_OPTIONS = presence.AFALG_KERNEL_OPTIONS

#: Largest request sent in one go; larger cipher requests are split and chained, larger AEAD
#: requests declined. virtio-crypto breaks above ~120 KiB in one request (kernel-rig-notes).
MAX_REQUEST = 64 * 1024
#: Bound tfm sockets kept (one per algorithm, driver and key).
MAX_TFMS = 64
#: Bound on the sockets an engine keeps open over all its threads (each thread keeps operation
#: sockets of its own, by algorithm and key): past it, a thread that needs a new one closes
#: those it keeps first, so that the engine holds at most this many and one per thread, not
#: up to 2 x MAX_TFMS per thread (a process has ~1024 descriptors for everything it does).
MAX_SOCKETS = 256
#: With ``splice="hardware"`` (or ``"always"``), cipher requests from this size up are spliced
#: into the socket (vmsplice: the caller's pages move, no copy) instead of sent with sendmsg.
#: Off by default because it did not pay where it was measured: in the rig (QEMU TCG) splicing
#: was 13-36% slower than sendmsg for the virtio device and 20-55% slower for aesni at 1.4 to
#: 64 KiB (benchmarks/afalg_splice.py). A board whose DMA engine reads user pages directly is
#: where it may pay: measure there before turning it on.
SPLICE_MIN = 16 * 1024
SPLICE_CHOICES = ("hardware", "always", "never")


def _kernel_names() -> dict[str, tuple[str, str]]:
    """Our algorithm name -> (AF_ALG type, kernel algorithm name)."""
    table: dict[str, tuple[str, str]] = {}
    for bits in (128, 192, 256):
        for mode in ("cbc", "ctr", "ecb", "cfb", "ofb"):
            table[f"aes-{bits}-{mode}"] = ("skcipher", f"{mode}(aes)")
        table[f"aes-{bits}-gcm"] = ("aead", "gcm(aes)")
        table[f"aes-{bits}-ccm"] = ("aead", "ccm(aes)")
        table[f"gmac-aes-{bits}"] = ("aead", "gcm(aes)")
        table[f"cmac-aes-{bits}"] = ("hash", "cmac(aes)")
    for bits in (128, 256):  # two AES keys: aes-128-xts takes 32 bytes
        table[f"aes-{bits}-xts"] = ("skcipher", "xts(aes)")
    for mode in ("ecb", "cbc"):
        table[f"3des-{mode}"] = ("skcipher", f"{mode}(des3_ede)")
    table["cmac-3des"] = ("hash", "cmac(des3_ede)")
    # The other ciphers the kernel has templates and drivers for (SM4 is left out: no kernel
    # this project was run on had it to check against).
    for mode in ("ecb", "cbc"):
        for bits in (128, 192, 256):
            table[f"camellia-{bits}-{mode}"] = ("skcipher", f"{mode}(camellia)")
        table[f"blowfish-{mode}"] = ("skcipher", f"{mode}(blowfish)")
        table[f"cast5-{mode}"] = ("skcipher", f"{mode}(cast5)")
    # The kernel's 16-byte ChaCha20 IV is ours: a 32-bit little-endian block counter, then
    # the 96-bit nonce (RFC 7539).
    table["chacha20"] = ("skcipher", "chacha20")
    table["chacha20-poly1305"] = ("aead", "rfc7539(chacha20,poly1305)")
    sha3 = ("sha3-224", "sha3-256", "sha3-384", "sha3-512")
    for h in ("sha1", "sha224", "sha256", "sha384", "sha512", *sha3, "sm3", "md5"):
        table[h] = ("hash", h)
        table[f"hmac-{h}"] = ("hash", f"hmac({h})")
    table["blake2b"] = ("hash", "blake2b-512")
    table["drbg"] = ("rng", "stdrng")
    return table


KERNEL_NAMES = _kernel_names()
# The request directions; the fallbacks let the stand-in tests run where socket lacks them.
_ENCRYPT = getattr(socket, "ALG_OP_ENCRYPT", 1)
_DECRYPT = getattr(socket, "ALG_OP_DECRYPT", 0)
#: The IV a mode without one (ECB) sends: the kernel takes an IV exactly as long as the mode's,
#: here 0 bytes, so every cipher request has the same form.
_NO_IV = b""


class _ThreadSockets(threading.local):
    """One thread's operation sockets and splice pipe (each thread sees its own members).

    A request that fails half way may leave data queued in its operation socket or the pipe:
    the next request must not be appended to it, so the ``discard_*`` methods close what it
    used and forget it, and the next request accepts a new socket.
    """

    def __init__(self) -> None:
        #: The cipher hot path's sockets, by (algorithm, key).
        self.fast: dict[tuple[str, bytes], socket.socket] = {}
        #: The other requests' sockets, by transform (the object: a closed transform's
        #: descriptor number is reused).
        self.ops: dict[socket.socket, socket.socket] = {}
        #: The transform whose socket in ``ops`` the request in flight uses.
        self.current: socket.socket | None = None
        #: The pipe spliced requests go through, made on first use.
        self.pipe: _splice.SplicePipe | None = None

    def keep(self, table: dict, key: Any, sock: socket.socket) -> socket.socket:
        """Put ``sock`` in ``table`` (``fast`` or ``ops``), which is bounded like the transform
        cache: when full, its sockets are closed and it starts again."""
        if len(table) >= MAX_TFMS:
            _close_all(table)
        table[key] = sock
        return sock

    def discard_fast(self, key: tuple[str, bytes]) -> None:
        """A hot-path request failed: its socket and the pipe go."""
        sock = self.fast.pop(key, None)
        if sock is not None:
            sock.close()
        self.discard_pipe()

    def discard_current(self) -> None:
        """A request on ``current``'s socket failed: that socket goes."""
        sock = self.ops.pop(self.current, None) if self.current is not None else None
        if sock is not None:
            sock.close()
        self.current = None

    def discard_pipe(self) -> None:
        pipe, self.pipe = self.pipe, None
        if pipe is not None:
            pipe.close()

    def close(self) -> None:
        """Close and forget every socket and the pipe."""
        _close_all(self.fast)
        _close_all(self.ops)
        self.current = None
        self.discard_pipe()


def _close_all(table: dict) -> None:
    for sock in table.values():
        sock.close()
    table.clear()


class AfalgEngine:
    """Ops through AF_ALG sockets; see the module docstring for the spec forms."""

    def __init__(
        self,
        driver: str | None = None,
        allow_software: bool = False,
        splice: str = "never",
        splice_min: int = SPLICE_MIN,
    ) -> None:
        if splice not in SPLICE_CHOICES:
            raise ValueError(f"splice must be one of {', '.join(SPLICE_CHOICES)}, got {splice!r}")
        self.driver = driver
        #: Which drivers' cipher requests are spliced rather than copied, and from what size.
        self.splice = splice if splice == "never" or _splice.AVAILABLE else "never"
        self.splice_min = splice_min
        self._splice_algs: frozenset[str] = frozenset()
        self.allow_software = allow_software or driver is not None
        self.name = f"afalg:{driver}" if driver else ("afalg:any" if allow_software else "afalg")
        self._bind: dict[str, tuple[str, str]] = {}  # our name -> (type, name to bind)
        self._drivers: dict[str, procfs.Entry] = {}
        self._tfms: collections.OrderedDict[tuple, socket.socket] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._local = _ThreadSockets()
        #: Every socket this engine opened and has not closed, whichever thread holds it: a
        #: forked child closes its copies of them all (see _after_fork_in_child).
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        _fork.watch(self)

    @property
    def hardware_only(self) -> bool:
        """Whether the engine promises hardware: plain ``afalg`` claims hardware drivers only."""
        return not self.allow_software

    # -- discovery ---------------------------------------------------------------------------------

    def probe(self) -> Capabilities:
        """Which of our algorithms the kernel binds, to which driver, hardware or software."""
        if not hasattr(socket, "AF_ALG"):
            return Capabilities(False, "this platform has no AF_ALG sockets (Linux only)")
        try:
            socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET).close()
        except OSError as exc:
            return Capabilities(
                False,
                f"the kernel refuses AF_ALG sockets ({exc.strerror}); it needs {KERNEL_OPTIONS}",
            )
        self._instantiate_templates()
        entries = procfs.read()
        claimed, skipped, detail = set(), {}, {}
        alternatives = self._alternatives(entries)
        for alg, (kind, kname) in KERNEL_NAMES.items():
            entry = self._entry_for(entries, kname)
            if entry is None:
                skipped[alg] = "not in the kernel" if self.driver is None else "not this driver"
                continue
            if not entry.hardware and not self.allow_software:
                skipped[alg] = f"software driver {entry.driver}"
                continue
            claimed.add(alg)
            self._drivers[alg] = entry
            self._bind[alg] = (kind, self.driver or kname)
            detail[alg] = {
                "kernel name": kname,
                "driver": entry.driver,
                "priority": entry.priority,
                "hardware": entry.hardware,
            }
        info = {"algorithms": detail, "skipped": skipped}
        if alternatives:
            info["alternatives"] = alternatives
        if self.splice != "never":
            self._splice_algs = frozenset(
                alg
                for alg in claimed
                if KERNEL_NAMES[alg][0] == "skcipher"
                and (self.splice == "always" or self._drivers[alg].hardware)
            )
        if not claimed:
            why = (
                "no algorithm is bound to a hardware driver"
                if not self.allow_software
                else (f"driver {self.driver} not found" if self.driver else "nothing usable")
            )
            specs = sorted({a["spec"] for found in alternatives.values() for a in found})
            if specs:
                why += f" (hardware drivers the kernel does not choose: {', '.join(specs)})"
            return Capabilities(False, why, detail=info)
        return Capabilities(True, "", frozenset(claimed), detail=info)

    def _alternatives(self, entries: list[procfs.Entry]) -> dict[str, list[dict[str, Any]]]:
        """Per algorithm, the hardware drivers registered beside the kernel's choice, which a
        spec can pin (``afalg:virtio_crypto_aes_cbc``); none for an engine pinned already."""
        if self.driver is not None:
            return {}
        out: dict[str, list[dict[str, Any]]] = {}
        for alg, (_, kname) in KERNEL_NAMES.items():
            found = procfs.candidates(entries, kname)
            others = [
                {
                    "kernel name": kname,
                    "driver": e.driver,
                    "priority": e.priority,
                    "module": e.module,
                    "spec": f"afalg:{e.driver}",
                }
                for e in found[1:]
                if e.hardware
            ]
            if others:
                out[alg] = others
        return out

    def _entry_for(self, entries: list[procfs.Entry], kname: str) -> procfs.Entry | None:
        if self.driver is not None:
            entry = procfs.by_driver(entries, self.driver)
            return entry if entry is not None and entry.name == kname else None
        return procfs.chosen(entries, kname)

    def _instantiate_templates(self) -> None:
        # Templates such as gcm(aes) or a pinned cbc(aes-generic) appear in /proc/crypto only
        # once something binds them.
        wanted = set(KERNEL_NAMES.values())
        if self.driver is not None:
            wanted |= {(kind, self.driver) for kind in ("skcipher", "aead", "hash", "rng")}
        for kind, kname in sorted(wanted):
            try:
                with socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET) as s:
                    s.bind((kind, kname))
            except OSError:
                pass

    # -- sockets -------------------------------------------------------------------------------

    def _tfm(self, alg: str, key: bytes | None, authsize: int | None = None) -> socket.socket:
        kind, name = self._bind[alg]
        cache_key = (kind, name, None if kind == "rng" else key, authsize)
        tfm = self._tfms.get(cache_key)
        if tfm is not None:
            return tfm
        tfm = socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET)
        self._sockets.add(tfm)
        try:
            tfm.bind((kind, name))
            if key is not None:
                tfm.setsockopt(socket.SOL_ALG, socket.ALG_SET_KEY, key)
            if authsize is not None:
                tfm.setsockopt(socket.SOL_ALG, socket.ALG_SET_AEAD_AUTHSIZE, None, authsize)
        except OSError as exc:
            tfm.close()
            raise _declined(exc) from None
        with self._lock:
            self._tfms[cache_key] = tfm
            while len(self._tfms) > MAX_TFMS:
                _, old = self._tfms.popitem(last=False)
                old.close()
        return tfm

    def _op_socket(self, tfm: socket.socket) -> socket.socket:
        """This thread's operation socket of ``tfm``, reused for every request; now current."""
        local = self._local
        sock = local.ops.get(tfm)
        if sock is None:
            self._make_room()
            sock = tfm.accept()[0]
            self._sockets.add(sock)
            local.keep(local.ops, tfm, sock)
        local.current = tfm
        return sock

    def _fast_socket(self, alg: str, key: bytes) -> socket.socket:
        """A new operation socket for this thread, algorithm and key (the cipher hot path)."""
        if alg not in self._bind:
            raise Unavailable("unsupported", alg)
        self._make_room()
        try:
            sock = self._tfm(alg, key).accept()[0]
        except OSError as exc:
            raise _declined(exc) from None
        self._sockets.add(sock)
        return self._local.keep(self._local.fast, (alg, key), sock)

    def _make_room(self) -> None:
        """Before this thread opens one more operation socket: with MAX_SOCKETS open already
        (transforms and every thread's), it closes those it keeps (its next requests accept
        anew)."""
        if len(self._sockets) >= MAX_SOCKETS:
            self._local.close()

    def close(self) -> None:
        """Close every socket this engine opened."""
        with self._lock:
            for tfm in self._tfms.values():
                tfm.close()
            self._tfms.clear()
        # This thread's operation sockets and pipe (other threads' go when their thread ends).
        self._local.close()

    def _after_fork_in_child(self) -> None:
        """In a forked child: close the child's copies of every inherited socket (the parent's
        stay open: they are its descriptors) and start with empty caches, so the child binds
        transforms and accepts operation sockets of its own and never interleaves its requests
        with the parent's on one kernel context."""
        self._lock = threading.Lock()
        for sock in list(self._sockets):
            sock.close()
        self._sockets = weakref.WeakSet()
        self._tfms = collections.OrderedDict()
        pipe = getattr(self._local, "pipe", None)
        if pipe is not None:
            pipe.close()
        self._local = _ThreadSockets()

    # -- operations ----------------------------------------------------------------------------

    def run(self, op: Any) -> Any:
        """Perform ``op`` in the kernel; decline what AF_ALG cannot express."""
        alg = op.alg
        family = op.family
        # Only the families that have it read ``data``: an rng op has none.
        if family == "cipher" and len(data := op.data) <= MAX_REQUEST:
            # The hot path, kept flat: one dict lookup finds this thread's operation socket for
            # this algorithm and key (the engine binds one driver per algorithm).
            sock = self._local.fast.get((alg, op.key))
            if sock is None:
                sock = self._fast_socket(alg, op.key)
            direction = _ENCRYPT if op.kind == "encrypt" else _DECRYPT
            n = len(data)
            try:
                if self._splice_algs and n >= self.splice_min and alg in self._splice_algs:
                    self._splice_request(sock, data, direction, op.iv)
                else:
                    # _send, inline: calling it would add ~40 ns, a sixth of the engine's own
                    # cost per op (benchmarks/afalg_python_cost.py).
                    sock.sendmsg_afalg([data], op=direction, iv=op.iv or _NO_IV)
                into = op.out
                if into is None:
                    out = sock.recv(n)
                    if len(out) < n:
                        out += _recv_exact(sock, n - len(out))
                else:  # the caller's buffer: the kernel writes the result there
                    got = sock.recv_into(into, n)
                    if got < n:
                        _recv_into_exact(sock, into, n, got)
                    out = n
            except BaseException as exc:
                # The socket (and the pipe) may hold half a request, whatever interrupted it (a
                # short read, KeyboardInterrupt): they go, and the next op starts anew.
                self._local.discard_fast((alg, op.key))
                if isinstance(exc, OSError):
                    raise _declined(exc) from None
                raise
            return out
        if alg not in self._bind:
            raise Unavailable("unsupported", alg)
        self._local.current = None
        try:
            if family == "cipher":
                return self._cipher(op)
            if family == "aead":
                return self._aead(op)
            if family == "hash" or (family == "mac" and not op.alg.startswith("gmac")):
                return self._digest(op)
            if family == "mac":
                return self._gmac(op)
            if family == "rng":
                return self._rng(op)
        except OSError as exc:
            self._local.discard_current()
            raise _declined(exc) from None
        except BaseException:
            self._local.discard_current()
            raise
        raise Unavailable("unsupported", f"family {family}")

    def _splice_request(
        self, sock: socket.socket, data: Any, direction: int, iv: bytes | None
    ) -> None:
        if not _spliceable(data):
            _send(sock, [data], direction, iv)
            return
        pipe = self._local.pipe
        if pipe is None:
            pipe = self._local.pipe = _splice.SplicePipe(MAX_REQUEST)
        _send(sock, (), direction, iv, socket.MSG_MORE)  # the header; the data follows
        pipe.send(sock.fileno(), data)

    def _cipher(self, op: Any) -> bytes | int:
        """A request above MAX_REQUEST (run's hot path takes the others): split and chained."""
        tfm = self._tfm(op.alg, op.key)
        sock = self._op_socket(tfm)
        direction = _ENCRYPT if op.kind == "encrypt" else _DECRYPT
        mode = op.alg.rsplit("-", 1)[-1]  # chacha20: the whole name
        if mode not in ("cbc", "ecb", "ctr", "chacha20"):
            raise Unavailable("too-large", f"{mode} requests above {MAX_REQUEST} bytes")
        data = memoryview(op.data).cast("B")
        out, iv = [], op.iv
        for start in range(0, len(data), MAX_REQUEST):
            chunk = data[start : start + MAX_REQUEST]
            _send(sock, [chunk], direction, iv)
            if op.out is None:
                result = _recv_exact(sock, len(chunk))
                out.append(result)
            else:
                result = op.out[start : start + len(chunk)]
                _recv_into_exact(sock, result, len(chunk))
            if mode == "cbc":  # the next IV: the last block (8 bytes for Triple DES)
                block = len(iv)
                iv = bytes(result[-block:] if op.kind == "encrypt" else chunk[-block:])
            elif mode == "ctr":
                iv = ivs.ctr_after(iv, len(chunk) // 16)
            elif mode == "chacha20":  # MAX_REQUEST is whole 64-byte blocks; the room for them
                # was checked above the engines
                iv = ivs.chacha20_at(iv, ivs.chacha20_counter(iv) + len(chunk) // 64)
        return b"".join(out) if op.out is None else len(data)

    def _aead(self, op: Any) -> bytes:
        if not isinstance(op.key, (bytes, bytearray, memoryview)):
            raise Unavailable("unsupported", "a key bound to another engine's device")
        tag_len = op.tag_length
        aad = op.aad or b""
        assoclen = _nbytes(aad)
        size = _nbytes(op.data)
        if size + assoclen > MAX_REQUEST:
            raise Unavailable("too-large", f"AEAD requests above {MAX_REQUEST} bytes")
        if op.alg.endswith("-gcm") and len(op.iv) != 12:
            raise Unavailable("unsupported", "the kernel's gcm(aes) takes 12-byte nonces only")
        iv = _ccm_iv(op.iv) if op.alg.endswith("-ccm") else op.iv
        tfm = self._tfm(op.alg, op.key, tag_len)
        sock = self._op_socket(tfm)
        # AAD and payload go as two buffers of one request, never joined; the kernel writes the
        # AAD back ahead of its answer (ciphertext and tag, or plaintext), in one buffer.
        msg = [aad, op.data] if assoclen else [op.data]
        if op.kind == "encrypt":
            out = _aead_request(sock, msg, _ENCRYPT, iv, assoclen, assoclen + size + tag_len)
            return out[assoclen:] if assoclen else out
        if not assoclen and size == tag_len:
            # Nothing to read back, so no read would report the tag check: leave it to software.
            raise Unavailable("unsupported", "AEAD decrypt with neither data nor AAD")
        try:
            out = _aead_request(sock, msg, _DECRYPT, iv, assoclen, assoclen + size - tag_len)
        except OSError as exc:
            if exc.errno == errno.EBADMSG:
                raise InvalidTag from None
            raise
        return out[assoclen:] if assoclen else out

    def _gmac(self, op: Any) -> bytes:
        if len(op.iv) != 12:
            raise Unavailable("unsupported", "the kernel's gcm(aes) takes 12-byte nonces only")
        size = _nbytes(op.data)
        if size > MAX_REQUEST:
            raise Unavailable("too-large", f"GMAC messages above {MAX_REQUEST} bytes")
        tfm = self._tfm(op.alg, op.key, op.tag_length)
        sock = self._op_socket(tfm)
        # The message is all AAD: the kernel writes it back ahead of the tag.
        out = _aead_request(sock, [op.data], _ENCRYPT, op.iv, size, size + op.tag_length)
        return out[size:]

    def _digest(self, op: Any) -> bytes:
        tfm = self._tfm(op.alg, op.key if op.family == "mac" else None)
        sock = self._op_socket(tfm)
        data = memoryview(op.data).cast("B")
        for start in range(0, len(data), MAX_REQUEST):
            sock.sendall(data[start : start + MAX_REQUEST], socket.MSG_MORE)
        sock.send(b"")
        return sock.recv(64)

    def open_stream(self, op: Any) -> _KernelStream:
        """A running hash or MAC in the kernel: data sent with MSG_MORE, copies by accept()."""
        bound = self._bind.get(op.alg)
        if bound is None:
            raise Unavailable("unsupported", op.alg)
        if bound[0] != "hash":  # GMAC: the kernel's gcm(aes) keeps no running state
            raise Unavailable("streaming", op.alg)
        try:
            tfm = self._tfm(op.alg, op.key if op.family == "mac" else None)
            return _KernelStream(tfm.accept()[0])
        except OSError as exc:
            raise _declined(exc) from None

    def _rng(self, op: Any) -> bytes:
        # The kernel's stdrng refuses to run unseeded; the seed given here is mixed with the
        # kernel's own entropy when its DRBG instantiates, so it adds to it and replaces nothing.
        tfm = self._tfm(op.alg, os.urandom(48))
        sock = self._op_socket(tfm)
        out = bytearray()
        while len(out) < op.length:
            chunk = sock.recv(min(128, op.length - len(out)))
            if not chunk:
                raise Unavailable("fault", "the kernel RNG returned nothing")
            out += chunk
        return bytes(out)


class _KernelStream:
    """One hash operation socket holding a partial state (see AfalgEngine.open_stream)."""

    __slots__ = ("_sock",)

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def update(self, data: Any) -> None:
        view = memoryview(data).cast("B")
        for start in range(0, len(view), MAX_REQUEST):
            self._sock.sendall(view[start : start + MAX_REQUEST], socket.MSG_MORE)

    def copy(self) -> _KernelStream:
        # accept() on an operation socket exports its partial state into a new socket.
        return _KernelStream(self._sock.accept()[0])

    def finalize(self) -> bytes:
        try:
            self._sock.send(b"")
            return self._sock.recv(64)
        finally:
            self._sock.close()

    def close(self) -> None:
        self._sock.close()


def _spliceable(data: Any) -> bool:
    if type(data) is bytes:
        return True
    try:
        view = memoryview(data)
    except TypeError:
        return False
    return not view.readonly and view.c_contiguous


def _nbytes(data: Any) -> int:
    return len(data) if data.__class__ is bytes else memoryview(data).nbytes


def _send(sock: socket.socket, msg: Any, direction: int, iv: bytes | None, flags: int = 0) -> None:
    """Send one cipher request: the buffers of ``msg``, its direction and IV (None for ECB)."""
    sock.sendmsg_afalg(msg, op=direction, iv=iv or _NO_IV, flags=flags)


def _aead_request(
    sock: socket.socket, msg: list, direction: int, iv: bytes, assoclen: int, n: int
) -> bytes:
    sock.sendmsg_afalg(msg, op=direction, iv=iv, assoclen=assoclen)
    return _recv_exact(sock, n)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    out = sock.recv(n)  # one read returns the whole result in practice
    while len(out) < n:
        more = sock.recv(n - len(out))
        if not more:
            raise Unavailable("fault", f"short read from the kernel ({len(out)} of {n} bytes)")
        out += more
    return out


def _recv_into_exact(sock: socket.socket, into: memoryview, n: int, got: int = 0) -> None:
    """Fill ``into[:n]`` from the socket, however many reads it takes."""
    while got < n:
        more = sock.recv_into(into[got:n], n - got)
        if not more:
            raise Unavailable("fault", f"short read from the kernel ({got} of {n} bytes)")
        got += more


def _ccm_iv(nonce: bytes) -> bytes:
    # The kernel's ccm(aes) takes the first counter block's flags byte: L' = 15 - nonce - 1.
    return bytes([14 - len(nonce)]) + nonce + bytes(15 - len(nonce))


def _declined(exc: OSError) -> Exception:
    """Map a socket error to the engine protocol: a decline the provider can count, or a fault."""
    code = exc.errno
    if code in (errno.EBUSY, errno.EAGAIN):
        return Unavailable("busy", exc.strerror or "")
    if code in (errno.ENOENT, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOSYS):
        return Unavailable("unsupported", exc.strerror or "")
    if code == errno.ENOMEM:
        return Unavailable("too-large", exc.strerror or "")
    if code == errno.ENOKEY:
        return Unavailable("fault", exc.strerror or "")
    return exc


def from_spec(arg: str) -> AfalgEngine:
    """``afalg`` / ``afalg:any`` / ``afalg:DRIVER``."""
    if not arg:
        return AfalgEngine()
    if arg == "any":
        return AfalgEngine(allow_software=True)
    if any(c.isspace() for c in arg):
        raise BadEngineSpec(f"afalg driver names have no spaces, got {arg!r}")
    return AfalgEngine(driver=arg)
