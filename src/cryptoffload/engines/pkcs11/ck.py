"""A thin ctypes layer over a PKCS#11 module: the few calls and structures the engine uses.

Why our own: python-pkcs11 0.10.1 calls ``C_Initialize(NULL)`` and releases the GIL, so SoftHSM
runs without its mutexes and two threads crash it; PyKCS11 1.5.20 also passes no
``CKF_OS_LOCKING_OK``. Here ``C_Initialize`` gets ``CK_C_INITIALIZE_ARGS`` with that flag, so
the module locks its own state and sessions may be used from several threads at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from ctypes import Structure, byref, c_char, c_ubyte, c_ulong, c_void_p
from typing import Any

ULONG = c_ulong
HANDLE = c_ulong

# Return values (the ones the engine tells apart).
CKR_OK = 0x0
CKR_GENERAL_ERROR = 0x5
CKR_ARGUMENTS_BAD = 0x7
CKR_ATTRIBUTE_SENSITIVE = 0x11
CKR_ATTRIBUTE_VALUE_INVALID = 0x13
CKR_DATA_INVALID = 0x20
CKR_DATA_LEN_RANGE = 0x21
CKR_DEVICE_ERROR = 0x30
CKR_DEVICE_MEMORY = 0x31
CKR_DEVICE_REMOVED = 0x32
CKR_ENCRYPTED_DATA_INVALID = 0x40
CKR_ENCRYPTED_DATA_LEN_RANGE = 0x41
CKR_FUNCTION_NOT_SUPPORTED = 0x54
CKR_KEY_HANDLE_INVALID = 0x60
CKR_KEY_SIZE_RANGE = 0x62
CKR_KEY_TYPE_INCONSISTENT = 0x63
CKR_KEY_FUNCTION_NOT_PERMITTED = 0x68
CKR_MECHANISM_INVALID = 0x70
CKR_MECHANISM_PARAM_INVALID = 0x71
CKR_OBJECT_HANDLE_INVALID = 0x82
CKR_PIN_INCORRECT = 0xA0
CKR_SESSION_CLOSED = 0xB0
CKR_SESSION_HANDLE_INVALID = 0xB3
CKR_SIGNATURE_INVALID = 0xC0
CKR_SIGNATURE_LEN_RANGE = 0xC1
CKR_TEMPLATE_INCONSISTENT = 0xD1
CKR_TOKEN_NOT_PRESENT = 0xE0
CKR_USER_ALREADY_LOGGED_IN = 0x100
CKR_USER_NOT_LOGGED_IN = 0x101
CKR_DOMAIN_PARAMS_INVALID = 0x130
CKR_CURVE_NOT_SUPPORTED = 0x140
CKR_BUFFER_TOO_SMALL = 0x150
CKR_CRYPTOKI_NOT_INITIALIZED = 0x190
CKR_CRYPTOKI_ALREADY_INITIALIZED = 0x191

#: What a decryption that does not authenticate or decode returns: SoftHSM reports a failed
#: GCM tag and an OAEP ciphertext that does not decrypt as CKR_GENERAL_ERROR.
DECRYPT_FAILED = frozenset(
    {CKR_GENERAL_ERROR, CKR_ENCRYPTED_DATA_INVALID, CKR_ENCRYPTED_DATA_LEN_RANGE, CKR_DATA_INVALID}
)

# Flags.
CKF_OS_LOCKING_OK = 0x2
CKF_TOKEN_PRESENT = 0x1
CKF_RW_SESSION = 0x2
CKF_SERIAL_SESSION = 0x4
CKF_LOGIN_REQUIRED = 0x4
CKU_USER = 1

# Object classes, key types, attributes.
CKO_PUBLIC_KEY = 2
CKO_PRIVATE_KEY = 3
CKO_SECRET_KEY = 4
CKK_RSA = 0x0
CKK_EC = 0x3
CKK_GENERIC_SECRET = 0x10
CKK_AES = 0x1F
CKA_CLASS = 0x0
CKA_TOKEN = 0x1
CKA_PRIVATE = 0x2
CKA_LABEL = 0x3
CKA_VALUE = 0x11
CKA_KEY_TYPE = 0x100
CKA_ID = 0x102
CKA_SENSITIVE = 0x103
CKA_ENCRYPT = 0x104
CKA_DECRYPT = 0x105
CKA_SIGN = 0x108
CKA_VERIFY = 0x10A
CKA_DERIVE = 0x10C
CKA_MODULUS = 0x120
CKA_MODULUS_BITS = 0x121
CKA_PUBLIC_EXPONENT = 0x122
CKA_PRIVATE_EXPONENT = 0x123
CKA_PRIME_1 = 0x124
CKA_PRIME_2 = 0x125
CKA_EXPONENT_1 = 0x126
CKA_EXPONENT_2 = 0x127
CKA_COEFFICIENT = 0x128
CKA_VALUE_LEN = 0x161
CKA_EXTRACTABLE = 0x162
CKA_EC_PARAMS = 0x180
CKA_EC_POINT = 0x181

# Mechanisms.
CKM_RSA_PKCS_KEY_PAIR_GEN = 0x0
CKM_RSA_PKCS = 0x1
CKM_RSA_PKCS_OAEP = 0x9
CKM_RSA_PKCS_PSS = 0xD
CKM_SHA_1 = 0x220
CKM_SHA_1_HMAC = 0x221
CKM_SHA224 = 0x255
CKM_SHA224_HMAC = 0x256
CKM_SHA256 = 0x250
CKM_SHA256_HMAC = 0x251
CKM_SHA384 = 0x260
CKM_SHA384_HMAC = 0x261
CKM_SHA512 = 0x270
CKM_SHA512_HMAC = 0x271
CKM_EC_KEY_PAIR_GEN = 0x1040
CKM_ECDSA = 0x1041
CKM_ECDH1_DERIVE = 0x1050
CKM_AES_KEY_GEN = 0x1080
CKM_AES_ECB = 0x1081
CKM_AES_CBC = 0x1082
CKM_AES_CTR = 0x1086
CKM_AES_GCM = 0x1087
CKM_AES_CMAC = 0x108A
CKG_MGF1_SHA1 = 0x1
CKG_MGF1_SHA256 = 0x2
CKG_MGF1_SHA384 = 0x3
CKG_MGF1_SHA512 = 0x4
CKG_MGF1_SHA224 = 0x5
CKZ_DATA_SPECIFIED = 0x1
CKD_NULL = 0x1


class CkError(Exception):
    """A PKCS#11 call returned something other than CKR_OK (``rv`` says what)."""

    def __init__(self, call: str, rv: int) -> None:
        super().__init__(f"{call} returned CKR 0x{rv:x}")
        self.call = call
        self.rv = rv


class InitArgs(Structure):
    _fields_ = [
        ("CreateMutex", c_void_p),
        ("DestroyMutex", c_void_p),
        ("LockMutex", c_void_p),
        ("UnlockMutex", c_void_p),
        ("flags", ULONG),
        ("pReserved", c_void_p),
    ]


class Version(Structure):
    _fields_ = [("major", c_ubyte), ("minor", c_ubyte)]


class TokenInfo(Structure):
    _fields_ = [
        ("label", c_char * 32),
        ("manufacturerID", c_char * 32),
        ("model", c_char * 16),
        ("serialNumber", c_char * 16),
        ("flags", ULONG),
        ("ulMaxSessionCount", ULONG),
        ("ulSessionCount", ULONG),
        ("ulMaxRwSessionCount", ULONG),
        ("ulRwSessionCount", ULONG),
        ("ulMaxPinLen", ULONG),
        ("ulMinPinLen", ULONG),
        ("ulTotalPublicMemory", ULONG),
        ("ulFreePublicMemory", ULONG),
        ("ulTotalPrivateMemory", ULONG),
        ("ulFreePrivateMemory", ULONG),
        ("hardwareVersion", Version),
        ("firmwareVersion", Version),
        ("utcTime", c_char * 16),
    ]


class Attribute(Structure):
    _fields_ = [("type", ULONG), ("pValue", c_void_p), ("ulValueLen", ULONG)]


class Mechanism(Structure):
    _fields_ = [("mechanism", ULONG), ("pParameter", c_void_p), ("ulParameterLen", ULONG)]


class MechanismInfo(Structure):
    _fields_ = [("ulMinKeySize", ULONG), ("ulMaxKeySize", ULONG), ("flags", ULONG)]


class GcmParams(Structure):
    """CK_GCM_PARAMS of v2.40 (with ulIvBits), as SoftHSM 2.6 and most modules lay it out."""

    _fields_ = [
        ("pIv", c_void_p),
        ("ulIvLen", ULONG),
        ("ulIvBits", ULONG),
        ("pAAD", c_void_p),
        ("ulAADLen", ULONG),
        ("ulTagBits", ULONG),
    ]


class CtrParams(Structure):
    _fields_ = [("ulCounterBits", ULONG), ("cb", c_ubyte * 16)]


class PssParams(Structure):
    _fields_ = [("hashAlg", ULONG), ("mgf", ULONG), ("sLen", ULONG)]


class OaepParams(Structure):
    _fields_ = [
        ("hashAlg", ULONG),
        ("mgf", ULONG),
        ("source", ULONG),
        ("pSourceData", c_void_p),
        ("ulSourceDataLen", ULONG),
    ]


class Ecdh1Params(Structure):
    _fields_ = [
        ("kdf", ULONG),
        ("ulSharedDataLen", ULONG),
        ("pSharedData", c_void_p),
        ("ulPublicDataLen", ULONG),
        ("pPublicData", c_void_p),
    ]


def buf(data: Any) -> Any:
    """A ctypes byte array holding a copy of ``data`` (kept alive by the caller)."""
    raw = bytes(data)
    return (c_ubyte * max(len(raw), 1)).from_buffer_copy(raw or b"\0")


def mechanism(mech: int, param: Any = None) -> Mechanism:
    """A CK_MECHANISM pointing at ``param`` (a ctypes structure the caller keeps alive)."""
    if param is None:
        return Mechanism(mech, None, 0)
    return Mechanism(mech, ctypes.cast(byref(param), c_void_p), ctypes.sizeof(param))


class Template:
    """A CK_ATTRIBUTE array built from (type, value) pairs; holds the value buffers alive."""

    def __init__(self, pairs: list[tuple[int, Any]]) -> None:
        self._keep: list[Any] = []
        self.array = (Attribute * max(len(pairs), 1))()
        self.count = len(pairs)
        for i, (kind, value) in enumerate(pairs):
            if isinstance(value, bool):
                raw = c_ubyte(1 if value else 0)
            elif isinstance(value, int):
                raw = ULONG(value)
            else:
                raw = buf(value)
            self._keep.append(raw)
            size = ctypes.sizeof(raw) if isinstance(value, int) else len(bytes(value))
            self.array[i] = Attribute(kind, ctypes.cast(byref(raw), c_void_p), size)

    def wipe(self) -> None:
        """Overwrite the value buffers (they may hold key material)."""
        for raw in self._keep:
            ctypes.memset(byref(raw), 0, ctypes.sizeof(raw))


class Module:
    """A loaded PKCS#11 module: its C_ functions by name, each raising CkError on failure.

    A module's state is per process, shared by every engine on it: :func:`acquire` and
    :func:`release` count its users so that it is initialised once and finalized by the last.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._dll = ctypes.CDLL(path)
        self._fns: dict[str, Any] = {}

    def fn(self, name: str) -> Any:
        f = self._fns.get(name)
        if f is None:
            f = getattr(self._dll, name)
            f.restype = ULONG
            self._fns[name] = f
        return f

    def call(self, name: str, *args: Any) -> int:
        """Call ``name``; CkError unless it returns CKR_OK."""
        rv = self.fn(name)(*args)
        if rv != CKR_OK:
            raise CkError(name, rv)
        return rv

    def raw(self, name: str, *args: Any) -> int:
        """Call ``name`` and return its CK_RV as it is."""
        return int(self.fn(name)(*args))

    def initialize(self) -> None:
        """C_Initialize with CKF_OS_LOCKING_OK: the module guards its state with OS mutexes."""
        args = InitArgs(None, None, None, None, CKF_OS_LOCKING_OK, None)
        rv = self.raw("C_Initialize", byref(args))
        if rv not in (CKR_OK, CKR_CRYPTOKI_ALREADY_INITIALIZED):
            raise CkError("C_Initialize", rv)

    def finalize(self) -> int:
        return self.raw("C_Finalize", None)

    def slots(self) -> list[int]:
        n = ULONG(0)
        self.call("C_GetSlotList", ctypes.c_ubyte(1), None, byref(n))
        arr = (ULONG * max(n.value, 1))()
        self.call("C_GetSlotList", ctypes.c_ubyte(1), arr, byref(n))
        return [arr[i] for i in range(n.value)]

    def token_info(self, slot: int) -> TokenInfo:
        info = TokenInfo()
        self.call("C_GetTokenInfo", ULONG(slot), byref(info))
        return info

    def mechanisms(self, slot: int) -> dict[int, MechanismInfo]:
        n = ULONG(0)
        self.call("C_GetMechanismList", ULONG(slot), None, byref(n))
        arr = (ULONG * max(n.value, 1))()
        self.call("C_GetMechanismList", ULONG(slot), arr, byref(n))
        out = {}
        for i in range(n.value):
            info = MechanismInfo()
            self.call("C_GetMechanismInfo", ULONG(slot), ULONG(arr[i]), byref(info))
            out[int(arr[i])] = info
        return out

    def open_session(self, slot: int) -> int:
        h = HANDLE(0)
        self.call(
            "C_OpenSession",
            ULONG(slot),
            ULONG(CKF_SERIAL_SESSION | CKF_RW_SESSION),
            None,
            None,
            byref(h),
        )
        return int(h.value)

    def close_session(self, session: int) -> None:
        self.raw("C_CloseSession", HANDLE(session))

    def login(self, session: int, pin: bytes) -> None:
        p = buf(pin)
        try:
            rv = self.raw("C_Login", HANDLE(session), ULONG(CKU_USER), p, ULONG(len(pin)))
        finally:
            ctypes.memset(p, 0, ctypes.sizeof(p))
        if rv not in (CKR_OK, CKR_USER_ALREADY_LOGGED_IN):
            raise CkError("C_Login", rv)

    def create(self, session: int, pairs: list[tuple[int, Any]]) -> int:
        t = Template(pairs)
        h = HANDLE(0)
        try:
            self.call("C_CreateObject", HANDLE(session), t.array, ULONG(t.count), byref(h))
        finally:
            t.wipe()
        return int(h.value)

    def destroy(self, session: int, obj: int) -> None:
        self.raw("C_DestroyObject", HANDLE(session), HANDLE(obj))

    def find(self, session: int, pairs: list[tuple[int, Any]], limit: int = 16) -> list[int]:
        t = Template(pairs)
        self.call("C_FindObjectsInit", HANDLE(session), t.array, ULONG(t.count))
        try:
            arr = (HANDLE * limit)()
            n = ULONG(0)
            self.call("C_FindObjects", HANDLE(session), arr, ULONG(limit), byref(n))
            return [int(arr[i]) for i in range(n.value)]
        finally:
            self.raw("C_FindObjectsFinal", HANDLE(session))

    def attribute(self, session: int, obj: int, kind: int) -> bytes:
        a = Attribute(kind, None, 0)
        self.call("C_GetAttributeValue", HANDLE(session), HANDLE(obj), byref(a), ULONG(1))
        raw = (c_ubyte * max(a.ulValueLen, 1))()
        a.pValue = ctypes.cast(raw, c_void_p)
        self.call("C_GetAttributeValue", HANDLE(session), HANDLE(obj), byref(a), ULONG(1))
        return bytes(raw[: a.ulValueLen])

    def one_shot(
        self, init: str, call: str, session: int, mech: Mechanism, key: int, data: Any, room: int
    ) -> bytes:
        """``init`` then the single-part ``call`` on ``data`` into ``room`` bytes of output."""
        self.call(init, HANDLE(session), byref(mech), HANDLE(key))
        src = buf(data)
        out = (c_ubyte * max(room, 1))()
        n = ULONG(room)
        self.call(call, HANDLE(session), src, ULONG(len(data)), out, byref(n))
        result = bytes(out[: n.value])
        ctypes.memset(out, 0, ctypes.sizeof(out))
        return result

    def digest(self, session: int, mech: Mechanism, data: Any, room: int) -> bytes:
        self.call("C_DigestInit", HANDLE(session), byref(mech))
        src = buf(data)
        out = (c_ubyte * room)()
        n = ULONG(room)
        self.call("C_Digest", HANDLE(session), src, ULONG(len(data)), out, byref(n))
        return bytes(out[: n.value])

    def verify(self, session: int, mech: Mechanism, key: int, data: bytes, sig: bytes) -> int:
        """C_VerifyInit and C_Verify: the CK_RV of C_Verify (CKR_SIGNATURE_INVALID is an answer)."""
        self.call("C_VerifyInit", HANDLE(session), byref(mech), HANDLE(key))
        d, s = buf(data), buf(sig)
        return self.raw("C_Verify", HANDLE(session), d, ULONG(len(data)), s, ULONG(len(sig)))

    def derive(self, session: int, mech: Mechanism, base: int, pairs: list[tuple[int, Any]]) -> int:
        t = Template(pairs)
        h = HANDLE(0)
        self.call("C_DeriveKey", HANDLE(session), byref(mech), HANDLE(base), t.array,
                  ULONG(t.count), byref(h))  # fmt: skip
        return int(h.value)

    def generate_key(self, session: int, mech: Mechanism, pairs: list[tuple[int, Any]]) -> int:
        t = Template(pairs)
        h = HANDLE(0)
        self.call("C_GenerateKey", HANDLE(session), byref(mech), t.array, ULONG(t.count), byref(h))
        return int(h.value)

    def generate_pair(
        self,
        session: int,
        mech: Mechanism,
        public: list[tuple[int, Any]],
        private: list[tuple[int, Any]],
    ) -> tuple[int, int]:
        pub, priv = Template(public), Template(private)
        hp, hk = HANDLE(0), HANDLE(0)
        self.call("C_GenerateKeyPair", HANDLE(session), byref(mech), pub.array, ULONG(pub.count),
                  priv.array, ULONG(priv.count), byref(hp), byref(hk))  # fmt: skip
        return int(hp.value), int(hk.value)


_loaded: dict[str, list[Any]] = {}  # path -> [Module, users]
_loaded_lock = threading.Lock()


def acquire(path: str) -> Module:
    """The module at ``path``, initialised (once per process, CKF_OS_LOCKING_OK)."""
    with _loaded_lock:
        entry = _loaded.get(path)
        if entry is None:
            module = Module(path)
            module.initialize()
            entry = _loaded[path] = [module, 0]
        entry[1] += 1
        return entry[0]


def release(path: str) -> None:
    """One user fewer; the last one finalizes the module."""
    with _loaded_lock:
        entry = _loaded.get(path)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del _loaded[path]
            entry[0].finalize()


def forget_all() -> None:
    """In a fork child: the modules' state is the parent's copy; finalize it and start over
    (a module that cannot initialise again then fails on the next ``acquire``)."""
    with contextlib.suppress(Exception):
        for module, _ in _loaded.values():
            module.finalize()
    _loaded.clear()
    global _loaded_lock
    _loaded_lock = threading.Lock()
