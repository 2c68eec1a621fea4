"""The /dev/crypto engine: cryptodev-linux sessions and ioctls to the kernel's crypto drivers.

Spec strings: ``cryptodev`` (only algorithms whose session binds a hardware driver, as the
session info's "kernel driver only" flag says) and ``cryptodev:any`` (software drivers too, like
OpenSSL's devcrypto "use soft drivers"). The device is reached only through :func:`open_device`
and :func:`ioctl`, looked up in this module at call time, so a stand-in can take their place.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import errno
import fcntl
import functools
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any, NamedTuple

from cryptography.exceptions import InvalidTag

from cryptoffload.blocks import ivs
from cryptoffload.core.names import HASHLIB, aes_name
from cryptoffload.devicekey import DeviceKey
from cryptoffload.engines import _fork, presence, procfs
from cryptoffload.engines.base import Capabilities
from cryptoffload.engines.cryptodev_abi import (
    AALG_MAX_RESULT_LEN,
    CIOCAUTHCRYPT,
    CIOCCPHASH,
    CIOCCRYPT,
    CIOCFSESSION,
    CIOCGSESSINFO,
    CIOCGSESSION,
    COP_DECRYPT,
    COP_ENCRYPT,
    COP_FLAG_FINAL,
    COP_FLAG_RESET,
    COP_FLAG_UPDATE,
    CRYPTO_AES_CBC,
    CRYPTO_AES_CTR,
    CRYPTO_AES_ECB,
    CRYPTO_AES_GCM,
    CRYPTO_HMAC_MAX_KEY_LEN,
    CRYPTO_SHA1,
    CRYPTO_SHA1_HMAC,
    CRYPTO_SHA2_224,
    CRYPTO_SHA2_224_HMAC,
    CRYPTO_SHA2_256,
    CRYPTO_SHA2_256_HMAC,
    CRYPTO_SHA2_384,
    CRYPTO_SHA2_384_HMAC,
    CRYPTO_SHA2_512,
    CRYPTO_SHA2_512_HMAC,
    SIOP_FLAG_KERNEL_DRIVER_ONLY,
    CphashOp,
    CryptAuthOp,
    CryptOp,
    SessionInfoOp,
    SessionOp,
)
from cryptoffload.errors import BadEngineSpec, Unavailable

DEVICE = presence.CRYPTODEV_DEVICE
HOW_TO_LOAD = presence.CRYPTODEV_HOW_TO_LOAD

#: The kernel copies associated data into one page (authenc.c refuses more); 4 KiB is the
#: smallest page, so no kernel takes less.
MAX_AAD = 4096
#: gcm(aes)'s IV size: the kernel copies exactly this many nonce bytes, whatever iv_len says.
GCM_NONCE = 12
#: Tag lengths gcm(aes) accepts. The kernel ignores a refused tag length (it keeps the last one
#: set), so anything else is declined here rather than sent.
GCM_TAGS = frozenset({4, 8, 12, 13, 14, 15, 16})


# -- the device --------------------------------------------------------------------------------


def open_device() -> int:
    """Open /dev/crypto; a file descriptor (its sessions go when it is closed)."""
    return os.open(DEVICE, os.O_RDWR | os.O_CLOEXEC)


def ioctl(fd: int, request: int, arg: Any) -> int:
    """One ioctl on the device: ``arg`` is the request's ctypes structure (a ``c_uint32`` for
    CIOCFSESSION), read and written in place; OSError with the kernel's errno on failure."""
    return fcntl.ioctl(fd, request, arg, True)


# -- the algorithms ------------------------------------------------------------------------------


class Algorithm(NamedTuple):
    """One of our algorithm names as cryptodev knows it."""

    kernel_name: str
    cipher: int  # cryptodev_crypto_op_t for session_op.cipher, or 0
    mac: int  # ... for session_op.mac, or 0
    key_length: int  # AES key bytes; 0 for hashes and HMAC
    mode: str  # cbc, ctr, ecb, gcm; "" for hashes and HMAC
    digest_size: int


def _algorithms() -> dict[str, Algorithm]:
    table: dict[str, Algorithm] = {}
    modes = {
        "cbc": CRYPTO_AES_CBC,
        "ctr": CRYPTO_AES_CTR,
        "ecb": CRYPTO_AES_ECB,
        "gcm": CRYPTO_AES_GCM,
    }
    for key_length in (16, 24, 32):
        for mode, cipher in modes.items():
            spec = Algorithm(f"{mode}(aes)", cipher, 0, key_length, mode, 0)
            table[aes_name(key_length, mode)] = spec
    hashes = {
        "sha1": (CRYPTO_SHA1, CRYPTO_SHA1_HMAC),
        "sha224": (CRYPTO_SHA2_224, CRYPTO_SHA2_224_HMAC),
        "sha256": (CRYPTO_SHA2_256, CRYPTO_SHA2_256_HMAC),
        "sha384": (CRYPTO_SHA2_384, CRYPTO_SHA2_384_HMAC),
        "sha512": (CRYPTO_SHA2_512, CRYPTO_SHA2_512_HMAC),
    }
    for name, (plain, keyed) in hashes.items():
        size = HASHLIB[name]().digest_size
        table[name] = Algorithm(name, 0, plain, 0, "", size)
        table[f"hmac-{name}"] = Algorithm(f"hmac({name})", 0, keyed, 0, "", size)
    return table


#: Our algorithm names -> how cryptodev opens a session for them.
ALGORITHMS = _algorithms()
_GCM = frozenset(alg for alg, spec in ALGORITHMS.items() if spec.mode == "gcm")
#: Largest request sent in one ioctl: longer cipher requests are split and chained by IV, longer
#: hashes sent as updates of a session of their own, longer AEAD requests declined (kept as the
#: AF_ALG engine's: drivers such as virtio-crypto break on much larger single requests).
MAX_REQUEST = 64 * 1024
#: Sessions kept per engine (one per algorithm and key), least recently used freed first.
MAX_SESSIONS = 64


def _hardware(driver: str, kernel_driver_only: bool) -> bool:
    """A session's driver is hardware when the kernel flags it "kernel driver only" (CAAM,
    QAT, CCP, talitos...) or when /proc/crypto's rule says so (a device module, or a name that
    is not CPU code): virtio-crypto's drivers do not set the flag, yet a device does the work."""
    return kernel_driver_only or _hardware_by_procfs(driver)


@functools.lru_cache(maxsize=256)
def _hardware_by_procfs(driver: str) -> bool:
    """/proc/crypto's verdict on ``driver``, read once per driver name (a new key's session
    must not pay for reading the whole table)."""
    entry = procfs.by_driver(procfs.read(), driver)
    return procfs.is_hardware(driver, entry.module if entry is not None else "kernel")


@dataclass(frozen=True)
class SessionInfo:
    """What CIOCGSESSINFO says of a session: the kernel's algorithm and driver, hardware or not."""

    kernel_name: str
    driver: str
    hardware: bool
    alignmask: int


class _Thread(threading.local):
    """One thread's request structures and result buffers, filled per op and never rebuilt."""

    def __init__(self, room: int) -> None:
        self.out = ctypes.create_string_buffer(room + AALG_MAX_RESULT_LEN)
        self.out_address = ctypes.addressof(self.out)
        self.view = memoryview(self.out).cast("B")
        self.digest = ctypes.create_string_buffer(AALG_MAX_RESULT_LEN)
        self.digest_view = memoryview(self.digest).cast("B")
        self.cop = CryptOp(dst=self.out_address)  # ciphers: the result lands in ``out``
        self.hop = CryptOp(op=COP_ENCRYPT, mac=ctypes.addressof(self.digest))  # hashes
        self.aop = CryptAuthOp(dst=self.out_address, iv_len=GCM_NONCE)


class CryptodevEngine:
    """Ops through /dev/crypto sessions; see the module docstring for the spec forms."""

    def __init__(
        self,
        allow_software: bool = False,
        max_request: int = MAX_REQUEST,
        max_sessions: int = MAX_SESSIONS,
    ) -> None:
        if max_request < 16 or max_request % 16:
            raise ValueError(f"max_request must be a multiple of 16 bytes, got {max_request}")
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        self.allow_software = allow_software
        #: Everything claimed runs on a hardware driver (the session info's flag says so).
        self.hardware_only = not allow_software
        self.name = "cryptodev:any" if allow_software else "cryptodev"
        self.max_request = max_request
        self.max_sessions = max_sessions
        self._fd: int | None = None
        self._closer: weakref.finalize | None = None
        #: Cached sessions by (algorithm, key), least recently used first.
        self._sessions: collections.OrderedDict[tuple[str, bytes], int] = collections.OrderedDict()
        #: Sessions that hold a running hash (streams, long digests): one user each.
        self._private: set[int] = set()
        #: Algorithms this engine will not run, and why (bound to a software driver).
        self._refused: dict[str, str] = {}
        self._lock = threading.Lock()
        self._local = _Thread(max_request)
        self._opened = 0
        self._freed = 0
        _fork.watch(self)

    def __repr__(self) -> str:
        return f"<CryptodevEngine {self.name}>"

    # -- the device and its sessions -----------------------------------------------------------

    def _device(self) -> int:
        fd = self._fd
        if fd is not None:
            return fd
        with self._lock:
            if self._fd is None:
                try:
                    fd = open_device()
                except OSError as exc:
                    raise Unavailable("no-device", _why_no_device(exc)) from None
                # Closing the descriptor frees every session the kernel holds for it.
                self._closer = weakref.finalize(self, _close_quietly, fd)
                self._fd = fd
            return self._fd

    def _create(self, fd: int, spec: Algorithm, key: bytes) -> int:
        sop = SessionOp()
        if spec.cipher:
            sop.cipher, sop.keylen, sop.key = spec.cipher, len(key), key
        else:
            sop.mac = spec.mac
            if key:
                sop.mackeylen, sop.mackey = len(key), key
        ioctl(fd, CIOCGSESSION, sop)
        self._opened += 1
        return sop.ses

    def _info(self, fd: int, sid: int) -> SessionInfo:
        siop = SessionInfoOp(ses=sid)
        ioctl(fd, CIOCGSESSINFO, siop)
        name, driver = siop.cipher_name, siop.cipher_driver
        if not name:
            name, driver = siop.hash_name, siop.hash_driver
        driver_name = driver.decode(errors="replace")
        return SessionInfo(
            name.decode(errors="replace"),
            driver_name,
            _hardware(driver_name, bool(siop.flags & SIOP_FLAG_KERNEL_DRIVER_ONLY)),
            siop.alignmask,
        )

    def _free(self, fd: int, sid: int) -> None:
        """Free a session; an error is ignored (the descriptor's close frees it anyway)."""
        with contextlib.suppress(OSError):
            ioctl(fd, CIOCFSESSION, ctypes.c_uint32(sid))
        self._freed += 1

    def _bound(self, alg: str, key: bytes) -> int:
        """A new session for ``alg`` and ``key``, refused if its driver is software (unless
        software drivers are allowed)."""
        spec = ALGORITHMS.get(alg)
        if spec is None:
            raise Unavailable("unsupported", f"{alg} is not offered through {DEVICE}")
        refused = self._refused.get(alg)
        if refused is not None:
            raise Unavailable("unsupported", refused)
        if spec.mac and len(key) > CRYPTO_HMAC_MAX_KEY_LEN:
            raise Unavailable("unsupported", f"HMAC keys above {CRYPTO_HMAC_MAX_KEY_LEN} bytes")
        fd = self._device()
        try:
            sid = self._create(fd, spec, key)
        except OSError as exc:
            raise _session_declined(exc) from None
        if self.allow_software:
            return sid
        try:
            info = self._info(fd, sid)
        except OSError as exc:
            self._free(fd, sid)
            if exc.errno in (errno.EBUSY, errno.EAGAIN, errno.ENOMEM):
                raise Unavailable("busy", f"CIOCGSESSINFO: {exc.strerror}") from None
            why = f"no session info ({exc.strerror}): hardware cannot be told from software"
            self._refused[alg] = why
            raise Unavailable("unsupported", why) from None
        if not info.hardware:
            self._free(fd, sid)
            why = self._refused[alg] = f"software driver: {info.driver}"
            raise Unavailable("unsupported", why)
        return sid

    def _session(self, alg: str, key: Any) -> int:
        """The cached session for ``alg`` and ``key``, the most recently used now; opened on a
        miss (the least recently used freed when more than ``max_sessions`` are open)."""
        if type(key) is bytes:
            sid = self._sessions.get((alg, key))
            if sid is not None:
                try:  # noqa: SIM105 (contextlib.suppress costs ~0.3 us per op)
                    self._sessions.move_to_end((alg, key))
                except KeyError:  # dropped by another thread meanwhile: still usable
                    pass
                return sid
        return self._new_cached(alg, _key_bytes(key))

    def _new_cached(self, alg: str, key: bytes) -> int:
        cache = self._sessions
        sid = cache.get((alg, key))
        if sid is not None:
            return sid
        sid = self._bound(alg, key)
        fd = self._fd
        dropped = []
        with self._lock:
            have = cache.get((alg, key))
            if have is not None:  # another thread opened one meanwhile: keep one
                dropped.append(sid)
                sid = have
            else:
                cache[(alg, key)] = sid
                while len(cache) > self.max_sessions:
                    dropped.append(cache.popitem(last=False)[1])
        # An op of another thread may still be using a dropped session: it fails with EINVAL,
        # declined as a fault, and software finishes it.
        for old in dropped:
            self._free(fd, old)
        return sid

    def _private_session(self, alg: str, key: Any) -> int:
        sid = self._bound(alg, _key_bytes(key))
        with self._lock:
            self._private.add(sid)
        return sid

    def _release(self, sid: int) -> None:
        """Free a private session, once (a stream's close, finalize or garbage collection)."""
        with self._lock:
            if sid not in self._private:
                return  # already freed, or the engine closed
            self._private.discard(sid)
            fd = self._fd
        if fd is not None:
            self._free(fd, sid)

    @property
    def figures(self) -> dict[str, int]:
        """Sessions: cached now, held by streams now, opened and freed so far."""
        return {
            "sessions_cached": len(self._sessions),
            "sessions_streaming": len(self._private),
            "sessions_opened": self._opened,
            "sessions_freed": self._freed,
        }

    def close(self) -> None:
        """Free every session and close the device (a later op opens it again)."""
        with self._lock:
            fd, closer = self._fd, self._closer
            self._fd = self._closer = None
            sids = [*self._sessions.values(), *self._private]
            self._sessions.clear()
            self._private.clear()
        if fd is None:
            return
        for sid in sids:
            self._free(fd, sid)
        if closer is not None:
            closer()

    def _after_fork_in_child(self) -> None:
        """In a forked child the descriptor is the parent's open file, sessions and all: the
        child closes its copy (the parent's stays open) and forgets the sessions without freeing
        them, so it opens the device and sessions of its own on its next op."""
        self._lock = threading.Lock()
        fd, closer = self._fd, self._closer
        self._fd = self._closer = None
        self._sessions = collections.OrderedDict()
        self._private = set()
        self._local = _Thread(self.max_request)
        if closer is not None:
            closer.detach()
        if fd is not None:
            _close_quietly(fd)

    # -- discovery -----------------------------------------------------------------------------

    def probe(self) -> Capabilities:
        """Per algorithm: a session with a throwaway key, its driver and hardware flag."""
        try:
            fd = self._device()
        except Unavailable as exc:
            return Capabilities(False, exc.detail)
        self._refused = {}
        claimed, algorithms, skipped = set(), {}, {}
        for alg, spec in ALGORITHMS.items():
            key = bytes(spec.key_length or (16 if alg.startswith("hmac-") else 0))
            try:
                sid = self._create(fd, spec, key)
            except OSError as exc:
                skipped[alg] = f"the kernel refuses a session ({exc.strerror})"
                continue
            try:
                info = self._info(fd, sid)
            except OSError as exc:
                info = None
                no_info = exc.strerror
            finally:
                self._free(fd, sid)
            if info is None:
                if not self.allow_software:
                    skipped[alg] = self._refused[alg] = (
                        f"no session info ({no_info}): hardware cannot be told from software"
                    )
                    continue
                info = SessionInfo(spec.kernel_name, "unknown", False, 0)
            if not info.hardware and not self.allow_software:
                skipped[alg] = self._refused[alg] = f"software driver: {info.driver}"
                continue
            claimed.add(alg)
            algorithms[alg] = {
                "kernel name": info.kernel_name,
                "driver": info.driver,
                "hardware": info.hardware,
                "alignmask": info.alignmask,
            }
        detail = {"device": DEVICE, "algorithms": algorithms, "skipped": skipped}
        if not claimed:
            why = "no algorithm is bound to a hardware driver" if skipped else "nothing usable"
            return Capabilities(False, why, detail=detail)
        return Capabilities(True, "", frozenset(claimed), detail=detail)

    # -- operations ----------------------------------------------------------------------------

    def run(self, op: Any) -> Any:
        """Perform ``op`` through the device; decline what cryptodev cannot express."""
        family = op.family
        if family == "cipher":
            data = op.data
            n = len(data) if type(data) is bytes else _nbytes(data)
            if 0 < n <= self.max_request:
                # The hot path, kept flat: one dict lookup finds the session, this thread's
                # structure is filled in place, the result is copied out of its buffer.
                key = op.key
                sessions = self._sessions
                sid = sessions.get((op.alg, key)) if type(key) is bytes else None
                if sid is None:
                    sid = self._session(op.alg, key)
                else:
                    try:  # noqa: SIM105 (contextlib.suppress costs ~0.3 us per op)
                        sessions.move_to_end((op.alg, key))
                    except KeyError:  # dropped by another thread meanwhile: still usable
                        pass
                local = self._local
                cop = local.cop
                cop.ses = sid
                cop.op = COP_ENCRYPT if op.kind == "encrypt" else COP_DECRYPT
                cop.flags = 0
                cop.len = n
                if type(data) is bytes:
                    cop.src = data  # a c_char_p: the kernel reads the bytes object's own buffer
                else:
                    cop.src, _pinned = _address(data)
                iv = op.iv
                cop.iv = iv if iv is None or type(iv) is bytes else bytes(iv)
                if op.out is not None:
                    return self._cipher_into(op.out, n, local)
                try:
                    ioctl(self._fd, CIOCCRYPT, cop)
                except OSError as exc:
                    raise _declined("CIOCCRYPT", exc) from None
                return local.view[:n].tobytes()
            if n == 0:
                return b"" if op.out is None else 0
            return self._cipher_chained(op, n)
        if family == "aead":
            return self._aead(op)
        if family in ("hash", "mac"):
            return self._digest(op)
        raise Unavailable("unsupported", f"{family} operations are not offered by {DEVICE}")

    def _cipher_into(self, out: Any, n: int, local: _Thread) -> int:
        """The request in ``local.cop``, its result written into the caller's buffer."""
        cop = local.cop
        try:
            target = (ctypes.c_char * n).from_buffer(out)
        except (TypeError, ValueError):  # not a writable contiguous buffer: via ours
            target = None
        else:
            cop.dst = ctypes.addressof(target)
        try:
            ioctl(self._fd, CIOCCRYPT, cop)
        except OSError as exc:
            raise _declined("CIOCCRYPT", exc) from None
        finally:
            cop.dst = local.out_address
        if target is None:
            out[:n] = local.view[:n]
        return n

    def _cipher_chained(self, op: Any, n: int) -> bytes | int:
        """A request above ``max_request``: sent in parts, each part's IV from the one before."""
        spec = ALGORITHMS.get(op.alg)
        if spec is None or not spec.cipher or spec.mode == "gcm":
            raise Unavailable("unsupported", f"{op.alg} is not offered through {DEVICE}")
        sid = self._session(op.alg, op.key)
        src, _pinned = _address(op.data)
        result = bytearray(n) if op.out is None else op.out
        try:
            target = (ctypes.c_char * n).from_buffer(result)
        except (TypeError, ValueError):  # the caller's buffer cannot be written in place
            result = bytearray(n)
            target = (ctypes.c_char * n).from_buffer(result)
        dst = ctypes.addressof(target)
        local = self._local
        cop = local.cop
        iv = None if op.iv is None else bytes(op.iv)
        step, mode, encrypt = self.max_request, spec.mode, op.kind == "encrypt"
        try:
            for start in range(0, n, step):
                m = min(step, n - start)
                cop.ses = sid
                cop.op = COP_ENCRYPT if encrypt else COP_DECRYPT
                cop.flags = 0
                cop.len = m
                cop.src = src + start
                cop.dst = dst + start
                cop.iv = iv
                # CBC's next IV is this part's last ciphertext block: read before the request
                # when decrypting (the output may be the input's own buffer).
                if mode == "cbc" and not encrypt:
                    next_iv = ctypes.string_at(src + start + m - 16, 16)
                ioctl(self._fd, CIOCCRYPT, cop)
                if mode == "cbc":
                    iv = ctypes.string_at(dst + start + m - 16, 16) if encrypt else next_iv
                elif mode == "ctr":
                    iv = ivs.ctr_after(iv, m // 16)
        except OSError as exc:
            raise _declined("CIOCCRYPT", exc) from None
        finally:
            cop.dst = local.out_address
        del target  # the caller's buffer is released before it is written below
        if op.out is None:
            return bytes(result)
        if result is not op.out:
            op.out[:n] = result
        return n

    def _aead(self, op: Any) -> bytes:
        if op.alg not in _GCM:
            raise Unavailable("unsupported", f"{op.alg} is not offered through {DEVICE}")
        nonce = op.iv
        if len(nonce) != GCM_NONCE:
            raise Unavailable("unsupported", "cryptodev's gcm(aes) takes 12-byte nonces only")
        tag = op.tag_length
        if tag not in GCM_TAGS:
            raise Unavailable("unsupported", f"gcm(aes) tags of {tag} bytes")
        aad = op.aad
        aad_len = 0 if aad is None else len(aad) if type(aad) is bytes else _nbytes(aad)
        if aad_len > MAX_AAD:
            raise Unavailable(
                "too-large", f"associated data above {MAX_AAD} bytes (the kernel takes one page)"
            )
        data = op.data
        n = len(data) if type(data) is bytes else _nbytes(data)
        if n > self.max_request:
            raise Unavailable("too-large", f"AEAD requests above {self.max_request} bytes")
        encrypt = op.kind == "encrypt"
        sid = self._session(op.alg, op.key)
        local = self._local
        aop = local.aop
        aop.ses = sid
        # flags stay 0 (plain AEAD) and tag stays unused: the kernel writes back only len and
        # tag (a pointer into dst it ignores on the next request), so neither is refilled.
        aop.op = COP_ENCRYPT if encrypt else COP_DECRYPT
        aop.len = n  # decrypt: the ciphertext and its tag
        aop.auth_len = aad_len
        if not aad_len:
            aop.auth_src = None
        elif type(aad) is bytes:
            aop.auth_src = aad
        else:
            aop.auth_src, _pinned_aad = _address(aad)
        # Never a NULL source, even for no data: cryptodev then builds no source list and a
        # kernel GCM driver (aesni's gcmaes_crypt_by_sg) dereferences it (seen in the rig: an
        # oops on an empty plaintext without AAD). The output buffer stands in, 0 bytes read.
        if not n:
            aop.src = local.out_address
        elif type(data) is bytes:
            aop.src = data
        else:
            aop.src, _pinned = _address(data)
        aop.tag_len = tag
        aop.iv = nonce if type(nonce) is bytes else bytes(nonce)
        try:
            ioctl(self._fd, CIOCAUTHCRYPT, aop)
        except OSError as exc:
            if not encrypt:
                # The kernel may have written unauthenticated plaintext: it never leaves here.
                ctypes.memset(local.out_address, 0, n)
                if exc.errno == errno.EBADMSG:
                    raise InvalidTag from None
            raise _declined("CIOCAUTHCRYPT", exc) from None
        return local.view[: n + tag if encrypt else n - tag].tobytes()

    def _digest(self, op: Any) -> bytes:
        spec = ALGORITHMS.get(op.alg)
        if spec is None or not spec.mac:
            raise Unavailable("unsupported", f"{op.alg} is not offered through {DEVICE}")
        key = op.key if op.family == "mac" else b""
        data = op.data
        n = len(data) if type(data) is bytes else _nbytes(data)
        if n > self.max_request:
            # Several ioctls on one running state: a session of its own, not the shared one.
            stream = self._stream(op.alg, key)
            try:
                stream.update(data)
                return stream.finalize()
            finally:
                stream.close()
        sid = self._session(op.alg, key)
        local = self._local
        hop = local.hop
        hop.ses = sid
        hop.flags = 0  # reset, hash, final: one whole digest
        hop.len = n
        if type(data) is bytes:
            hop.src = data
        else:
            hop.src, _pinned = _address(data)
        try:
            ioctl(self._fd, CIOCCRYPT, hop)
        except OSError as exc:
            raise _declined("CIOCCRYPT", exc) from None
        return local.digest_view[: spec.digest_size].tobytes()

    def _hash_request(self, sid: int, flags: int, src: int | None, n: int) -> None:
        hop = self._local.hop
        hop.ses = sid
        hop.flags = flags
        hop.len = n
        hop.src = src
        try:
            ioctl(self._fd, CIOCCRYPT, hop)
        except OSError as exc:
            raise _declined("CIOCCRYPT", exc) from None

    def _stream(self, alg: str, key: Any) -> _SessionStream:
        spec = ALGORITHMS.get(alg)
        if spec is None or not spec.mac:
            raise Unavailable("unsupported", f"{alg} is not offered through {DEVICE}")
        key = _key_bytes(key)
        return _SessionStream(self, alg, key, spec.digest_size, self._private_session(alg, key))

    def open_stream(self, op: Any) -> _SessionStream:
        """A running hash or HMAC in a session of its own (update and final flags)."""
        return self._stream(op.alg, op.key if op.family == "mac" else b"")


class _SessionStream:
    """A session holding a running hash: updates with COP_FLAG_UPDATE, the digest with
    COP_FLAG_FINAL, copies through CIOCCPHASH. Its session is freed by finalize, close, the
    engine's close, or when the stream is collected."""

    __slots__ = ("__weakref__", "_alg", "_engine", "_key", "_release", "_sid", "_size", "_started")

    def __init__(self, engine: CryptodevEngine, alg: str, key: bytes, size: int, sid: int) -> None:
        self._engine = engine
        self._alg = alg
        self._key = key
        self._size = size
        self._sid = sid
        self._started = False
        self._release = weakref.finalize(self, engine._release, sid)
        self._release.atexit = False

    def update(self, data: Any) -> None:
        n = _nbytes(data)
        if not n:
            return  # an empty update would end the hash in the kernel
        src, _pinned = _address(data)
        step = self._engine.max_request
        for start in range(0, n, step):
            flags = COP_FLAG_UPDATE if self._started else COP_FLAG_UPDATE | COP_FLAG_RESET
            self._engine._hash_request(self._sid, flags, src + start, min(step, n - start))
            self._started = True

    def copy(self) -> _SessionStream:
        engine = self._engine
        twin = engine._stream(self._alg, self._key)
        if self._started:
            try:
                ioctl(engine._fd, CIOCCPHASH, CphashOp(dst_ses=twin._sid, src_ses=self._sid))
            except OSError as exc:
                twin.close()
                raise _declined("CIOCCPHASH", exc) from None
            twin._started = True
        return twin

    def finalize(self) -> bytes:
        engine = self._engine
        try:
            # Nothing sent yet: flags 0 resets and ends at once (the empty message's digest).
            engine._hash_request(self._sid, COP_FLAG_FINAL if self._started else 0, None, 0)
            return engine._local.digest_view[: self._size].tobytes()
        finally:
            self.close()

    def close(self) -> None:
        self._release()


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _key_bytes(key: Any) -> bytes:
    if type(key) is bytes:
        return key
    if isinstance(key, DeviceKey):
        raise Unavailable("unsupported", f"a key bound to {key.engine}")
    if isinstance(key, (bytearray, memoryview)):
        return bytes(key)
    raise Unavailable("unsupported", f"keys of type {type(key).__name__}")


def _nbytes(data: Any) -> int:
    return len(data) if type(data) is bytes else memoryview(data).nbytes


def _address(data: Any) -> tuple[int, Any]:
    """The address of ``data``'s bytes, and what keeps them there until the ioctl returns."""
    if type(data) is bytes:
        return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0, data
    try:
        pinned = (ctypes.c_char * _nbytes(data)).from_buffer(data)
    except (TypeError, ValueError):  # read-only or not contiguous: a copy
        pinned = bytes(data)
        return ctypes.cast(ctypes.c_char_p(pinned), ctypes.c_void_p).value or 0, pinned
    return ctypes.addressof(pinned), pinned


def _session_declined(exc: OSError) -> Unavailable:
    """A refused CIOCGSESSION: the kernel lacks the algorithm or refuses the key."""
    code = exc.errno
    if code in (errno.EINVAL, errno.ENOENT, errno.EOPNOTSUPP, errno.ENOSYS):
        return Unavailable("unsupported", f"the kernel refuses the session ({exc.strerror})")
    if code == errno.ENOMEM:
        return Unavailable("busy", f"CIOCGSESSION: {exc.strerror}")
    return _declined("CIOCGSESSION", exc)


def _declined(call: str, exc: OSError) -> Unavailable:
    """Map an ioctl's error to a decline: busy, no device, or a fault (no output released)."""
    code = exc.errno
    detail = f"{call}: {exc.strerror or os.strerror(code or 0)}"
    if code in (errno.EBUSY, errno.EAGAIN):
        return Unavailable("busy", detail)
    if code in (errno.ENODEV, errno.ENXIO, errno.EBADF):
        return Unavailable("no-device", detail)
    return Unavailable("fault", detail)


def _why_no_device(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return f"{DEVICE} does not exist: {HOW_TO_LOAD}"
    if exc.errno in (errno.ENODEV, errno.ENXIO):
        return f"{DEVICE} has no driver behind it: {HOW_TO_LOAD}"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (
            f"cannot open {DEVICE} ({exc.strerror}): give this user read and write access to it "
            "(a udev rule or group)"
        )
    return f"cannot open {DEVICE}: {exc.strerror}"


def from_spec(arg: str) -> CryptodevEngine:
    """``cryptodev`` / ``cryptodev:any``."""
    if not arg:
        return CryptodevEngine()
    if arg == "any":
        return CryptodevEngine(allow_software=True)
    raise BadEngineSpec(
        f"cryptodev takes no option but 'any' (software drivers allowed), got 'cryptodev:{arg}'"
    )
