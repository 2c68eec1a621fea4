"""The ABI of cryptodev-linux's crypto/cryptodev.h: constants, structures and ioctl numbers.

:class:`Abi` builds the structures for any pointer size and byte order and computes the request
numbers with the machine's ``_IOC`` encoding; :data:`NATIVE` is this process's.
"""

from __future__ import annotations

import ctypes
import platform
from dataclasses import dataclass
from typing import Any

#: enum cryptodev_crypto_op_t, the members this engine uses.
CRYPTO_SHA1_HMAC = 7
CRYPTO_AES_CBC = 11
CRYPTO_SHA1 = 14
CRYPTO_SHA2_256_HMAC = 18
CRYPTO_SHA2_384_HMAC = 19
CRYPTO_SHA2_512_HMAC = 20
CRYPTO_AES_CTR = 21
CRYPTO_AES_ECB = 23
CRYPTO_AES_GCM = 50
CRYPTO_SHA2_224 = 103
CRYPTO_SHA2_256 = 104
CRYPTO_SHA2_384 = 105
CRYPTO_SHA2_512 = 106
CRYPTO_SHA2_224_HMAC = 107

CRYPTO_HMAC_MAX_KEY_LEN = 512
CRYPTODEV_MAX_ALG_NAME = 64
AALG_MAX_RESULT_LEN = 64
SIOP_FLAG_KERNEL_DRIVER_ONLY = 1
COP_ENCRYPT = 0
COP_DECRYPT = 1
COP_FLAG_UPDATE = 1 << 0
COP_FLAG_FINAL = 1 << 1
COP_FLAG_WRITE_IV = 1 << 2
COP_FLAG_RESET = 1 << 6

_U16 = ctypes.c_uint16
_U32 = ctypes.c_uint32
_NAME = ctypes.c_char * CRYPTODEV_MAX_ALG_NAME
# Pointer fields: "in" ones the kernel reads (bytes go there without a copy), "out" ones it
# writes (addresses of this engine's buffers or the caller's).
_IN, _OUT = "in", "out"
_SESSION_OP = (
    ("cipher", _U32),
    ("mac", _U32),
    ("keylen", _U32),
    ("key", _IN),
    ("mackeylen", _U32),
    ("mackey", _IN),
    ("ses", _U32),
)
# struct session_info_op: the two struct alg_info members (two name arrays each) laid out flat.
_SESSION_INFO_OP = (
    ("ses", _U32),
    ("cipher_name", _NAME),
    ("cipher_driver", _NAME),
    ("hash_name", _NAME),
    ("hash_driver", _NAME),
    ("alignmask", _U16),
    ("flags", _U32),
)
_CRYPT_OP = (
    ("ses", _U32),
    ("op", _U16),
    ("flags", _U16),
    ("len", _U32),
    ("src", _IN),
    ("dst", _OUT),
    ("mac", _OUT),
    ("iv", _IN),
)
_CRYPT_AUTH_OP = (
    ("ses", _U32),
    ("op", _U16),
    ("flags", _U16),
    ("len", _U32),
    ("auth_len", _U32),
    ("auth_src", _IN),
    ("src", _IN),
    ("dst", _OUT),
    ("tag", _OUT),
    ("tag_len", _U32),
    ("iv", _IN),
    ("iv_len", _U32),
)
_CPHASH_OP = (("dst_ses", _U32), ("src_ses", _U32))


@dataclass(frozen=True)
class IocEncoding:
    """How an architecture's ``_IOC`` packs direction, size, type and number into a request."""

    none: int
    write: int
    read: int
    size_bits: int

    def request(self, direction: int, kind: str, nr: int, size: int) -> int:
        """``_IOC(direction, kind, nr, size)``."""
        if not 0 <= size < 1 << self.size_bits:
            raise ValueError(f"an ioctl argument of {size} bytes does not fit the size field")
        return direction << (16 + self.size_bits) | size << 16 | ord(kind) << 8 | nr


#: asm-generic/ioctl.h: x86, ARM, arm64, RISC-V, s390...
GENERIC_IOC = IocEncoding(none=0, write=1, read=2, size_bits=14)
#: PowerPC (QorIQ), MIPS, SPARC and Alpha: a 3-bit direction and a 13-bit size.
THREE_BIT_IOC = IocEncoding(none=1, write=4, read=2, size_bits=13)
#: PA-RISC: the generic widths with read and write swapped.
PARISC_IOC = IocEncoding(none=0, write=2, read=1, size_bits=14)


def ioc_encoding(machine: str) -> IocEncoding:
    """The ``_IOC`` encoding of a machine as ``uname -m`` names it."""
    if machine.startswith(("ppc", "powerpc", "mips", "sparc", "alpha")):
        return THREE_BIT_IOC
    if machine.startswith("parisc"):
        return PARISC_IOC
    return GENERIC_IOC


class Abi:
    """The header's structures and ioctl numbers for one build: pointer fields of ``in_pointer``
    and ``out_pointer`` (native: ``c_char_p`` and ``c_void_p``; ``c_uint32`` for a 32-bit layout),
    ``base`` for the byte order, and the machine's ``_IOC`` encoding."""

    def __init__(
        self,
        in_pointer: Any = ctypes.c_char_p,
        out_pointer: Any = ctypes.c_void_p,
        base: Any = ctypes.Structure,
        encoding: IocEncoding | None = None,
    ) -> None:
        ioc = encoding if encoding is not None else ioc_encoding(platform.machine())
        types = {_IN: in_pointer, _OUT: out_pointer}

        def struct(name: str, fields: tuple) -> Any:
            resolved = [(field, types.get(kind, kind)) for field, kind in fields]
            return type(name, (base,), {"_fields_": resolved})

        self.SessionOp = struct("SessionOp", _SESSION_OP)
        self.SessionInfoOp = struct("SessionInfoOp", _SESSION_INFO_OP)
        self.CryptOp = struct("CryptOp", _CRYPT_OP)
        self.CryptAuthOp = struct("CryptAuthOp", _CRYPT_AUTH_OP)
        self.CphashOp = struct("CphashOp", _CPHASH_OP)
        rw, w = ioc.read | ioc.write, ioc.write
        size = ctypes.sizeof
        self.CIOCGSESSION = ioc.request(rw, "c", 102, size(self.SessionOp))
        self.CIOCFSESSION = ioc.request(w, "c", 103, size(_U32))
        self.CIOCCRYPT = ioc.request(rw, "c", 104, size(self.CryptOp))
        self.CIOCGSESSINFO = ioc.request(rw, "c", 107, size(self.SessionInfoOp))
        self.CIOCAUTHCRYPT = ioc.request(rw, "c", 109, size(self.CryptAuthOp))
        self.CIOCCPHASH = ioc.request(w, "c", 112, size(self.CphashOp))


#: This process's layout (its pointer size and byte order, its machine's ioctl encoding).
NATIVE = Abi()
SessionOp = NATIVE.SessionOp
SessionInfoOp = NATIVE.SessionInfoOp
CryptOp = NATIVE.CryptOp
CryptAuthOp = NATIVE.CryptAuthOp
CphashOp = NATIVE.CphashOp
CIOCGSESSION = NATIVE.CIOCGSESSION
CIOCFSESSION = NATIVE.CIOCFSESSION
CIOCCRYPT = NATIVE.CIOCCRYPT
CIOCGSESSINFO = NATIVE.CIOCGSESSINFO
CIOCAUTHCRYPT = NATIVE.CIOCAUTHCRYPT
CIOCCPHASH = NATIVE.CIOCCPHASH
