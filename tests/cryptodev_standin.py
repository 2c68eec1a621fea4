"""An in-process stand-in of cryptodev-linux's kernel side, answering at the real ioctl numbers.

``install()`` puts a :class:`Device` in place of ``cryptodev.open_device`` and
``cryptodev.ioctl``; ``uninstall()`` puts the real ones back (tests/conftest.py does it after
every test). The device decodes the bytes of each request structure at the argument's address
with its own ``struct`` formats (not the engine's ctypes classes), at request numbers it
computes itself from ``_IOC``; it reads keys, IVs, data and associated data through the pointers
given and writes results through the output pointers, as ioctl.c, main.c and authenc.c do:
EINVAL for an unknown algorithm, a bad key size, a bad session or a length that is not a whole
number of blocks, EBADMSG for a failed tag (after writing the unauthenticated plaintext, as a
zero-copy decryption may), ENOENT for freeing an unknown session; hash sessions reset, update
and finalize by the COP_FLAG rules of crypto_run(). Answers are computed with `cryptography`
and hashlib. Drivers come from a table (:attr:`Device.drivers`) so that a test can bind an
algorithm to a software driver, and errors can be injected per request (:meth:`Device.fail`).
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import hmac
import os
import platform
import random
import struct
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from cryptoffload.engines import cryptodev

# -- the kernel's view of the ABI, written apart from the engine's ------------------------------

# Native-aligned struct formats of the header's structures ("0P" pads the end to a pointer).
SESSION_OP = struct.Struct("@IIIPIPI0P")  # cipher mac keylen key mackeylen mackey ses
SESSION_INFO_OP = struct.Struct("@I64s64s64s64sHI")  # ses, 2 x alg_info, alignmask, flags
CRYPT_OP = struct.Struct("@IHHIPPPP0P")  # ses op flags len src dst mac iv
CRYPT_AUTH_OP = struct.Struct(
    "@IHHIIPPPPIPI0P"
)  # ... auth_len auth_src src dst tag tag_len iv iv_len
CPHASH_OP = struct.Struct("@II")  # dst_ses src_ses
U32 = struct.Struct("@I")


def _ioc(direction: str, nr: int, size: int) -> int:
    """``_IOC`` as linux/ioctl.h defines it for this machine (3-bit direction on PowerPC, MIPS,
    SPARC and Alpha)."""
    machine = platform.machine()
    if machine.startswith(("ppc", "powerpc", "mips", "sparc", "alpha")):
        bits = {"w": 4, "rw": 6}[direction]
        return bits << 29 | size << 16 | ord("c") << 8 | nr
    bits = {"w": 1, "rw": 3}[direction]
    return bits << 30 | size << 16 | ord("c") << 8 | nr


CIOCGSESSION = _ioc("rw", 102, SESSION_OP.size)
CIOCFSESSION = _ioc("w", 103, U32.size)
CIOCCRYPT = _ioc("rw", 104, CRYPT_OP.size)
CIOCGSESSINFO = _ioc("rw", 107, SESSION_INFO_OP.size)
CIOCAUTHCRYPT = _ioc("rw", 109, CRYPT_AUTH_OP.size)
CIOCCPHASH = _ioc("w", 112, CPHASH_OP.size)
REQUEST_NAMES = {
    CIOCGSESSION: "CIOCGSESSION",
    CIOCFSESSION: "CIOCFSESSION",
    CIOCCRYPT: "CIOCCRYPT",
    CIOCGSESSINFO: "CIOCGSESSINFO",
    CIOCAUTHCRYPT: "CIOCAUTHCRYPT",
    CIOCCPHASH: "CIOCCPHASH",
}

# cryptodev_crypto_op_t values (crypto/cryptodev.h) and the kernel names ioctl.c gives them.
CIPHERS = {11: "cbc(aes)", 21: "ctr(aes)", 23: "ecb(aes)", 50: "gcm(aes)"}
HASHES = {14: "sha1", 103: "sha224", 104: "sha256", 105: "sha384", 106: "sha512"}
HMACS = {7: "sha1", 107: "sha224", 18: "sha256", 19: "sha384", 20: "sha512"}
COP_FLAG_UPDATE, COP_FLAG_FINAL, COP_FLAG_WRITE_IV, COP_FLAG_NO_ZC = 1, 2, 4, 8
COP_FLAG_RESET = 64
#: The sessions' alignmask (what CIOCGSESSINFO reports): buffers off it turn zero-copy off.
ALIGNMASK = 15
COP_FLAG_AEAD_TLS_TYPE, COP_FLAG_AEAD_SRTP_TYPE = 16, 32
PAGE_SIZE = 4096


def _default_drivers() -> dict[str, tuple[str, bool]]:
    """Every algorithm on a CAAM-like hardware driver (name, "kernel driver only")."""
    table = {f"{m}(aes)": (f"{m}-aes-caam", True) for m in ("cbc", "ctr", "ecb", "gcm")}
    for h in HASHES.values():
        table[h] = (f"{h}-caam", True)
        table[f"hmac({h})"] = (f"hmac-{h}-caam", True)
    return table


@dataclass
class Session:
    """One session: its cipher (kernel name, key) or its hash state."""

    name: str
    driver: str
    hardware: bool
    key: bytes = b""
    hash_name: str = ""
    mac_key: bytes | None = None
    state: Any = None
    tag_len: int = 16
    ops: int = 0

    @property
    def aead(self) -> bool:
        return self.name == "gcm(aes)"

    def reset(self) -> None:
        if self.mac_key is None:
            self.state = hashlib.new(self.hash_name)
        else:
            self.state = hmac.new(self.mac_key, digestmod=self.hash_name)


@dataclass
class Injected:
    """An error the next ``times`` requests of one number get; ``scribble`` writes junk into the
    output first (a device that failed half way)."""

    code: int
    times: int = 1
    scribble: bool = False


@dataclass
class Device:
    """The kernel side of /dev/crypto for every descriptor ``open_device`` gave out."""

    drivers: dict[str, tuple[str, bool]] = field(default_factory=_default_drivers)
    #: (kernel name, key length) pairs a driver refuses (EINVAL at CIOCGSESSION).
    refused_keys: set[tuple[str, int]] = field(default_factory=set)
    seed: int = 0
    #: Requests made, by name.
    calls: Counter = field(default_factory=Counter)
    #: Descriptors opened, sessions opened and freed over the device's life.
    opened: int = 0
    created: int = 0
    freed: int = 0

    def __post_init__(self) -> None:
        self.files: dict[int, dict[int, Session]] = {}
        self.injected: dict[int, Injected] = {}
        self.seen: list[dict[str, Any]] = []  # decoded CIOCCRYPT / CIOCAUTHCRYPT requests
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()  # the kernel's per-session mutex, simplified
        self._handlers = {
            CIOCGSESSION: self._new_session,
            CIOCFSESSION: self._free_session,
            CIOCGSESSINFO: self._session_info,
            CIOCCRYPT: self._crypt,
            CIOCAUTHCRYPT: self._auth_crypt,
            CIOCCPHASH: self._copy_hash,
        }

    # -- what tests read and set -----------------------------------------------------------------

    @property
    def open_sessions(self) -> int:
        """Sessions allocated and not freed, over every descriptor."""
        return sum(len(sessions) for sessions in self.files.values())

    def bind(self, kernel_name: str, driver: str, hardware: bool) -> None:
        """Make sessions of ``kernel_name`` bind ``driver`` from now on."""
        self.drivers[kernel_name] = (driver, hardware)

    def fail(self, request: int, code: int, times: int = 1, scribble: bool = False) -> None:
        """The next ``times`` requests numbered ``request`` fail with ``code``."""
        self.injected[request] = Injected(code, times, scribble)

    # -- the two entry points the engine calls ---------------------------------------------------

    def open_device(self) -> int:
        fd = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)  # a real descriptor to close
        self.files[fd] = {}
        self.opened += 1
        return fd

    def ioctl(self, fd: int, request: int, arg: Any) -> int:
        handler = self._handlers.get(request)
        self.calls[REQUEST_NAMES.get(request, hex(request))] += 1
        if handler is None:
            raise _error(errno.EINVAL)  # ioctl.c: an unknown request number
        if fd not in self.files:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        assert ctypes.sizeof(arg) == (request >> 16) & 0x1FFF, "argument size != request's"
        address = ctypes.addressof(arg)
        with self._lock:
            injected = self.injected.get(request)
            if injected is not None and injected.times > 0:
                injected.times -= 1
                if injected.scribble and request in (CIOCCRYPT, CIOCAUTHCRYPT):
                    self._scribble(request, address)
                raise OSError(injected.code, os.strerror(injected.code))
            return handler(self.files[fd], address)

    # -- the requests ----------------------------------------------------------------------------

    def _new_session(self, sessions: dict[int, Session], address: int) -> int:
        cipher, mac, keylen, key_p, mackeylen, mackey_p, _ = _read(SESSION_OP, address)
        if not cipher and not mac:
            raise _error(errno.EINVAL)
        if cipher:
            if cipher not in CIPHERS or mac:
                raise _error(errno.EINVAL)  # not one of ours (the kernel has more)
            name = CIPHERS[cipher]
            key = ctypes.string_at(key_p, keylen)
            if keylen not in (16, 24, 32) or (name, keylen) in self.refused_keys:
                raise _error(errno.EINVAL)  # check_key_size / setkey
            session = self._bound(name, key=key)
        else:
            if mac in HASHES:
                session = self._bound(HASHES[mac], hash_name=HASHES[mac])
            elif mac in HMACS:
                if mackeylen > 512:
                    raise _error(errno.EINVAL)
                key = ctypes.string_at(mackey_p, mackeylen) if mackey_p else b""
                name = f"hmac({HMACS[mac]})"
                session = self._bound(name, hash_name=HMACS[mac], mac_key=key)
            else:
                raise _error(errno.EINVAL)
            session.reset()
        sid = self._rng.getrandbits(32)
        while sid in sessions:
            sid = self._rng.getrandbits(32)
        sessions[sid] = session
        self.created += 1
        _write_back(address, SESSION_OP, {6: sid})  # ses
        return 0

    def _bound(self, name: str, **kw: Any) -> Session:
        if name not in self.drivers:
            raise _error(errno.EINVAL)  # the kernel has no driver for it
        driver, hardware = self.drivers[name]
        return Session(name, driver, hardware, **kw)

    def _free_session(self, sessions: dict[int, Session], address: int) -> int:
        (sid,) = _read(U32, address)
        if sessions.pop(sid, None) is None:
            raise _error(errno.ENOENT)
        self.freed += 1
        return 0

    def _session_info(self, sessions: dict[int, Session], address: int) -> int:
        (sid, *_rest) = _read(SESSION_INFO_OP, address)
        session = _get(sessions, sid)
        names = [b"", b"", b"", b""]
        if session.hash_name:  # hash_info
            names[2:] = [session.name.encode(), session.driver.encode()]
        else:  # cipher_info
            names[:2] = [session.name.encode(), session.driver.encode()]
        flags = 1 if session.hardware else 0  # SIOP_FLAG_KERNEL_DRIVER_ONLY
        packed = SESSION_INFO_OP.pack(sid, *names, ALIGNMASK, flags)
        ctypes.memmove(address, packed, len(packed))
        return 0

    def _crypt(self, sessions: dict[int, Session], address: int) -> int:
        sid, op, flags, length, src, dst, mac, iv_p = _read(CRYPT_OP, address)
        self.seen.append(
            {
                "request": "CIOCCRYPT",
                "ses": sid,
                "op": op,
                "flags": flags,
                "len": length,
                "src": src,
                "dst": dst,
                "mac": mac,
                "iv": iv_p,
            }
        )
        if op not in (0, 1):
            raise _error(errno.EINVAL)
        session = _get(sessions, sid)
        session.ops += 1
        if length and ((src & ALIGNMASK) or (dst & ALIGNMASK)):
            # main.c turns zero-copy off in the request, and the request is copied back.
            _write_back(address, CRYPT_OP, {2: flags | COP_FLAG_NO_ZC})
        data = ctypes.string_at(src, length) if length else b""
        if session.hash_name:
            if flags == 0 or flags & COP_FLAG_RESET:
                session.reset()
            if length:
                session.state.update(data)
            if flags & COP_FLAG_FINAL or not flags & COP_FLAG_UPDATE or length == 0:
                digest = session.state.digest()
                ctypes.memmove(mac, digest, len(digest))
            return 0
        if session.aead:
            raise _error(errno.EINVAL)  # gcm goes through CIOCAUTHCRYPT
        mode = session.name[:3]
        if mode != "ctr" and length % 16:
            raise _error(errno.EINVAL)  # not a multiple of the block size
        iv = ctypes.string_at(iv_p, 16) if iv_p and mode != "ecb" else bytes(16)
        mode_obj = {"cbc": modes.CBC, "ctr": modes.CTR}[mode](iv) if mode != "ecb" else modes.ECB()
        cipher = Cipher(algorithms.AES(session.key), mode_obj)
        ctx = cipher.encryptor() if op == 0 else cipher.decryptor()
        out = ctx.update(data) + ctx.finalize()
        if length:
            ctypes.memmove(dst, out, length)
        if flags & COP_FLAG_WRITE_IV and iv_p and mode != "ecb":
            ctypes.memmove(iv_p, _next_iv(mode, iv, data if op else out), 16)
        return 0

    def _auth_crypt(self, sessions: dict[int, Session], address: int) -> int:
        fields = _read(CRYPT_AUTH_OP, address)
        sid, op, flags, length, auth_len, auth_p, src, dst, _tag, tag_len, iv_p, iv_len = fields
        self.seen.append(
            {
                "request": "CIOCAUTHCRYPT",
                "ses": sid,
                "op": op,
                "flags": flags,
                "len": length,
                "auth_len": auth_len,
                "src": src,
                "dst": dst,
                "tag_len": tag_len,
                "iv_len": iv_len,
            }
        )
        if op not in (0, 1):
            raise _error(errno.EINVAL)
        session = _get(sessions, sid)
        session.ops += 1
        if not session.aead or flags & (COP_FLAG_AEAD_TLS_TYPE | COP_FLAG_AEAD_SRTP_TYPE):
            raise _error(errno.EINVAL)
        if auth_len > PAGE_SIZE:
            raise _error(errno.EINVAL)  # "auth data len is excessive"
        tag_len = tag_len or 16
        if tag_len > 16 or tag_len not in (4, 8, 12, 13, 14, 15, 16):
            raise _error(errno.EINVAL)
        aad = ctypes.string_at(auth_p, auth_len) if auth_p and auth_len else b""
        data = ctypes.string_at(src, length) if src and length else b""
        nonce = ctypes.string_at(iv_p, 12)  # the session's ivsize, whatever iv_len says
        if op == 0:
            enc = Cipher(algorithms.AES(session.key), modes.GCM(nonce)).encryptor()
            enc.authenticate_additional_data(aad)
            out = enc.update(data) + enc.finalize() + enc.tag[:tag_len]
            ctypes.memmove(dst, out, len(out))
            _write_back(address, CRYPT_AUTH_OP, {3: len(out), 8: dst + length})  # len, tag
            return 0
        if length < tag_len:
            raise _error(errno.EINVAL)
        body, tag = data[: length - tag_len], data[length - tag_len :]
        # What a zero-copy decryption leaves in dst whether or not the tag holds.
        keystream = Cipher(algorithms.AES(session.key), modes.CTR(nonce + b"\0\0\0\2"))
        plain = keystream.encryptor().update(body)
        if plain:
            ctypes.memmove(dst, plain, len(plain))
        dec = Cipher(algorithms.AES(session.key), modes.GCM(nonce, tag, tag_len)).decryptor()
        dec.authenticate_additional_data(aad)
        try:
            dec.update(body)
            dec.finalize()
        except InvalidTag:
            raise _error(errno.EBADMSG) from None
        _write_back(address, CRYPT_AUTH_OP, {3: len(plain), 8: dst + length - tag_len})
        return 0

    def _copy_hash(self, sessions: dict[int, Session], address: int) -> int:
        dst_sid, src_sid = _read(CPHASH_OP, address)
        if dst_sid == src_sid:
            raise _error(errno.EDEADLK)
        if dst_sid not in sessions or src_sid not in sessions:
            raise _error(errno.ENOENT)
        source, target = sessions[src_sid], sessions[dst_sid]
        if not source.hash_name or not target.hash_name:
            raise _error(errno.EINVAL)
        target.state = source.state.copy()
        return 0

    def _scribble(self, request: int, address: int) -> None:
        if request == CIOCCRYPT:
            _, _, _, length, _, dst, _, _ = _read(CRYPT_OP, address)
        else:
            length, dst = _read(CRYPT_AUTH_OP, address)[3], _read(CRYPT_AUTH_OP, address)[7]
        if dst and length:
            ctypes.memset(dst, 0xEE, length)


def _read(layout: struct.Struct, address: int) -> tuple:
    return layout.unpack(ctypes.string_at(address, layout.size))


def _write_back(address: int, layout: struct.Struct, changed: dict[int, int]) -> None:
    """Write the structure at ``address`` back with the fields at ``changed``'s indexes set, as
    copy_to_user does with the kernel's copy."""
    fields = list(_read(layout, address))
    for index, value in changed.items():
        fields[index] = value
    packed = layout.pack(*fields)
    ctypes.memmove(address, packed, len(packed))


def _get(sessions: dict[int, Session], sid: int) -> Session:
    session = sessions.get(sid)
    if session is None:
        raise _error(errno.EINVAL)  # "invalid session ID"
    return session


def _error(code: int) -> OSError:
    return OSError(code, os.strerror(code))


def _next_iv(mode: str, iv: bytes, ciphertext: bytes) -> bytes:
    if mode == "cbc":
        return ciphertext[-16:] if ciphertext else iv
    blocks = (len(ciphertext) + 15) // 16
    return ((int.from_bytes(iv, "big") + blocks) % (1 << 128)).to_bytes(16, "big")


# -- putting it in place -----------------------------------------------------------------------

_REAL = (cryptodev.open_device, cryptodev.ioctl)
_installed: Device | None = None


def install(device: Device | None = None) -> Device:
    """Put ``device`` (a new one by default) behind ``cryptodev``'s two entry points."""
    global _installed
    device = device if device is not None else Device()
    cryptodev.open_device = device.open_device
    cryptodev.ioctl = device.ioctl
    _installed = device
    return device


def installed() -> Device | None:
    """The device in place now, if any."""
    return _installed


def uninstall() -> None:
    """Put the real ``open_device`` and ``ioctl`` back (nothing to do when none is installed)."""
    global _installed
    cryptodev.open_device, cryptodev.ioctl = _REAL
    _installed = None
