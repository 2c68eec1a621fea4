"""The software engine: OpenSSL through `cryptography` (and hashlib/hmac, also OpenSSL)."""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

from cryptography.hazmat.bindings._rust import openssl as _rust_openssl
from cryptography.hazmat.decrepit.ciphers import algorithms as decrepit
from cryptography.hazmat.primitives import cmac
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import (
    AESCCM,
    AESGCM,
    AESGCMSIV,
    AESOCB3,
    AESSIV,
    ChaCha20Poly1305,
)
from cryptography.hazmat.primitives.poly1305 import Poly1305

from cryptoffload import modes
from cryptoffload.blocks._lazy import LazyModule
from cryptoffload.core.names import CIPHER_CLASSES, HASH_NAMES, XOF_NAMES, all_algorithms
from cryptoffload.core.ops import Op
from cryptoffload.devicekey import DeviceKey
from cryptoffload.engines import _software_more
from cryptoffload.engines._extensions import load_extension
from cryptoffload.engines._kept import MAKE_CONTEXT, CarriedContexts, KeyedObjects, carries
from cryptoffload.engines.base import Capabilities
from cryptoffload.errors import NoResult, Unavailable

#: RSA's padding rules and raw exponentiation: loaded by the first RSA op (a start-up cost).
pkcs1 = LazyModule("cryptoffload.blocks.pkcs1")

#: CPU flags that OpenSSL uses for the algorithms here, as /proc/cpuinfo names them.
_CRYPTO_FLAGS = (
    "aes",
    "vaes",
    "pclmulqdq",
    "vpclmulqdq",
    "sha_ni",
    "avx2",
    "avx512f",
    "pmull",
    "sha1",
    "sha2",
    "sha512",
    "sha3",
)


def cpu_crypto_features() -> list[str]:
    """The crypto-relevant CPU features this machine reports (empty where /proc is absent)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    present = set(value.split())
                    return [flag for flag in _CRYPTO_FLAGS if flag in present]
    except OSError:
        pass
    return []


def python_version() -> str:
    """``platform.python_version()`` (``3.11.7``, ``3.13.0rc1``), without platform's import."""
    version = sys.version.split()[0]
    return version if version.count(".") > 1 else f"{version}.0"


_MODES = {
    "cbc": modes.CBC,
    "ctr": modes.CTR,
    "cfb": modes.CFB,
    "cfb8": modes.CFB8,
    "ofb": modes.OFB,
    "xts": modes.XTS,
}


def cipher_mode(mode: str, iv: bytes | None) -> modes.Mode:
    """The `cryptography` mode object for one of our cipher mode names."""
    return modes.ECB() if mode == "ecb" else _MODES[mode](iv)


def block_cipher(alg: str, key: bytes) -> Any:
    """The `cryptography` algorithm object for a cipher name (or CMAC's: ``3des``) and key."""
    cls = CIPHER_CLASSES.get(alg.split("-", 1)[0], algorithms.AES)
    return cls(key)


def _whole_cipher(op: Any) -> Cipher:
    alg = op.alg
    if alg == "chacha20":
        return Cipher(algorithms.ChaCha20(op.key, op.iv), None)
    if alg == "arc4":
        return Cipher(decrepit.ARC4(op.key), None)
    return Cipher(block_cipher(alg, op.key), cipher_mode(alg.rsplit("-", 1)[1], op.iv))


#: Key schedules kept between ops under the same key, and chained contexts carried on (see
#: cryptoffload.engines._kept): a chained ``Cipher`` context's ops, or one key's AEAD ops, pay
#: OpenSSL's set-up once instead of per op.
_KEYED = KeyedObjects()
_CARRIED = CarriedContexts()


def gcm_encrypt(
    key: bytes, nonce: Any, data: Any, aad: Any, tag_length: int, alg: str = "aes"
) -> bytes:
    """GCM ciphertext and tag in one buffer (a short tag: the full tag's leading bytes); AES
    unless ``alg`` names another 16-byte block cipher (``sm4-gcm``)."""
    if tag_length == 16 and alg[0] == "a":
        return _KEYED.get(AESGCM, key).encrypt(nonce, data, aad)
    ctx = Cipher(block_cipher(alg, key), modes.GCM(nonce)).encryptor()
    if aad:
        ctx.authenticate_additional_data(aad)
    out = ctx.update(data) + ctx.finalize()
    return out + ctx.tag[:tag_length]


def gcm_decrypt(
    key: bytes, nonce: Any, sealed: Any, aad: Any, tag_length: int, alg: str = "aes"
) -> bytes:
    """Plaintext of GCM ciphertext followed by its tag, or InvalidTag (and nothing else); AES
    unless ``alg`` names another 16-byte block cipher (``sm4-gcm``)."""
    if tag_length == 16 and alg[0] == "a":
        return _KEYED.get(AESGCM, key).decrypt(nonce, sealed, aad)
    view = memoryview(sealed).cast("B")
    tag = bytes(view[-tag_length:])
    mode = modes.GCM(nonce, tag, min_tag_length=tag_length)
    ctx = Cipher(block_cipher(alg, key), mode).decryptor()
    if aad:
        ctx.authenticate_additional_data(aad)
    out = ctx.update(view[:-tag_length])
    return out + ctx.finalize()


def gmac_tag(key: bytes, nonce: Any, message: Any, tag_length: int) -> bytes:
    """The GMAC tag of ``message``: GCM over associated data alone, cut to ``tag_length``."""
    ctx = Cipher(algorithms.AES(key), modes.GCM(nonce)).encryptor()
    ctx.authenticate_additional_data(message)
    ctx.finalize()
    return ctx.tag[:tag_length]


class SoftwareEngine:
    """Runs every operation in OpenSSL on the CPU; the reference all other engines are held to."""

    name = "software"

    def probe(self) -> Capabilities:
        """Always available; reports the OpenSSL build and the machine."""
        return Capabilities(
            available=True,
            reason="",
            algorithms=frozenset(all_algorithms()),
            detail={
                "openssl": _rust_openssl.openssl_version_text(),  # the backend's, without it
                "machine": os.uname().machine,  # platform.machine(), without platform's import
                "cpu crypto features": " ".join(cpu_crypto_features()) or "none found",
                "python": python_version(),
            },
        )

    def run(self, op: Op) -> Any:
        """Perform ``op`` with OpenSSL (never with a key bound to a device: DeviceKeyError)."""
        if op.family in _AES_KEYED and isinstance(op.key, DeviceKey):
            raise op.key.refuse("software")
        handler = _HANDLERS.get(op.family)
        if handler is None:
            raise Unavailable("unsupported", f"family {op.family!r}")
        return handler(op)

    def session(self, op: Op) -> Any:
        """`cryptography`'s object for ``op``'s key, doing what :meth:`run` does for its ops:

        - an AEAD (``op`` with iv, data and aad None): its AEAD object (``encrypt``,
          ``decrypt``); none for the AEADs :meth:`run` does otherwise (GCM with a short tag,
          SIV, SM4);
        - a block cipher in ECB, CBC or CTR (``op`` with the chaining value as iv, data
          None): a context from there on (``update``, ``update_into``), as OpenSSL's context
          carries a chained ``Cipher`` context's ops on;
        - a fixed-size hash (``op`` with data None): ``digest(data)``, hashlib's;
        - an HMAC (``op`` with key and data None): ``mac(key, data)``, hashlib's HMAC.

        None for other families and algorithms, a device key, and a subclass that defines its
        own ``run``."""
        family = op.family
        if (
            family not in _SESSION_FAMILIES
            or type(self).run is not SoftwareEngine.run
            or "run" in vars(self)
        ):
            return None
        if family == "cipher":  # first: a chained Cipher context asks for one per message
            alg = op.alg
            mode_class = _SESSION_MODES.get(alg, _UNSEEN)
            if mode_class is _UNSEEN:
                mode_class = _session_mode(alg)
            key = op.key
            if mode_class is False or (key.__class__ is not bytes and isinstance(key, DeviceKey)):
                return None
            if MAKE_CONTEXT is None:
                cipher = _whole_cipher(op)
                return cipher.encryptor() if op.kind == "encrypt" else cipher.decryptor()
            # What `cryptography`'s encryptor and decryptor call, the key's algorithm object
            # kept (the provider validated key and IV: no second check of them here).
            algorithm = _KEYED.peek((_keyed_cipher, key, alg))
            if algorithm is None:
                algorithm = _KEYED.get(_keyed_cipher, key, alg)
            if mode_class is None:
                mode_object = modes.ECB()
            elif len(op.iv) != 16:  # what Cipher refuses: no session, the ordinary path says why
                return None
            else:
                mode_object = mode_class(op.iv)
            return MAKE_CONTEXT[op.kind != "encrypt"](algorithm, mode_object)
        if family != "hash" and isinstance(op.key, DeviceKey):
            return None
        alg = op.alg
        if family == "hash":
            return _HashSession(alg) if alg in HASH_NAMES and alg not in XOF_NAMES else None
        if family == "mac":
            base = alg[5:]
            if not alg.startswith("hmac-") or base not in HASH_NAMES or base in XOF_NAMES:
                return None
            return _HmacSession(base)
        if alg.startswith("aes-") and alg.endswith("-gcm"):
            return AESGCM(op.key) if op.tag_length == 16 else None
        if alg.startswith("aes-") and alg.endswith("-ccm"):
            return AESCCM(op.key, op.tag_length)
        if alg.endswith("-siv") and not alg.endswith("gcm-siv"):
            return None
        for end, cls in _AEADS.items():
            if alg.endswith(end):
                return cls(op.key)
        return None


#: Our cipher names SoftwareEngine.session has been asked for -> the mode's class (None for
#: ECB), or False for one it keeps no session for (not ECB, CBC or CTR).
_SESSION_MODES: dict[str, Any] = {}
_UNSEEN = object()


def _gcm_fields() -> dict[str, Any] | None:
    """The attributes of `cryptography`'s ``GCM(iv, min_tag_length=4)`` but the IV, when the mode
    is a plain object of those three (then :func:`py_gcm_stream` and its compiled twin copy them
    into a new one instead of running ``GCM.__init__``'s checks again); None for another
    layout."""
    try:
        fields = dict(vars(modes.GCM(bytes(12), min_tag_length=4)))
    except TypeError:  # no __dict__: a compiled mode
        return None
    if set(fields) != {"_initialization_vector", "_tag", "_min_tag_length"}:
        return None
    del fields["_initialization_vector"]
    return fields


_GCM_FIELDS = _gcm_fields()
_GCM_STREAM_ALGS = frozenset(f"aes-{bits}-gcm" for bits in (128, 192, 256))
#: The GCM nonce lengths `cryptography`'s ``GCM`` takes (bytes); engines/_contexts.c has the same.
_GCM_NONCE_MIN, _GCM_NONCE_MAX = 8, 128


def py_gcm_stream(op: Any) -> Any:
    """An engine AEAD stream (``open_aead_stream`` in engines/base.py) over OpenSSL's streaming
    AES-GCM context for ``op`` (kind, key, and the nonce as iv), tags of 4 bytes and more taken:
    what `cryptography`'s ``Cipher(AES(key), GCM(iv, min_tag_length=4))`` gives, the key's
    algorithm object kept. The provider validated key and nonce: the mode is not checked again
    (its attributes copied, see :func:`_gcm_fields`), but a nonce of a length ``GCM`` refuses
    (under 8 or over 128 bytes) is declined ``unsupported`` so that whoever runs the op says
    why. Unavailable (``streaming``) for an algorithm other than AES-GCM. The pure-Python twin
    of :func:`gcm_stream`; the compiled one (engines/_contexts.c) comes here for anything but an
    AES-GCM op of bytes, nonce of such a length, whose key's AES object is kept."""
    alg = op.alg
    if alg not in _GCM_STREAM_ALGS:
        raise Unavailable("streaming", alg)
    key, iv = op.key, op.iv
    if key.__class__ is not bytes:
        key = bytes(key)
    if iv.__class__ is not bytes:
        iv = bytes(iv)
    if not _GCM_NONCE_MIN <= len(iv) <= _GCM_NONCE_MAX:
        raise Unavailable("unsupported", f"a GCM nonce of {len(iv)} bytes")
    encrypt = op.kind == "encrypt"
    if MAKE_CONTEXT is None or _GCM_FIELDS is None:
        cipher = Cipher(algorithms.AES(key), modes.GCM(iv, min_tag_length=4))
        ctx = cipher.encryptor() if encrypt else cipher.decryptor()
    else:
        mode = _new(modes.GCM)
        vars(mode).update(_GCM_FIELDS)
        mode._initialization_vector = iv
        algorithm = _KEYED.peek((_keyed_cipher, key, alg)) or _KEYED.get(_keyed_cipher, key, alg)
        ctx = MAKE_CONTEXT[not encrypt](algorithm, mode)
    stream = _new(GcmEncryptStream if encrypt else GcmDecryptStream)  # no __init__ frame
    stream._ctx = ctx
    stream.update = ctx.update
    stream.update_aad = ctx.authenticate_additional_data
    return stream


_new = object.__new__


class _GcmStream:
    """OpenSSL's GCM context with the engine AEAD stream's members (engines/base.py):
    ``update`` and ``update_aad`` are the context's own methods, bound (see
    :func:`py_gcm_stream`, which makes these; the compiled twin's are ``_contexts.GcmStream``)."""

    __slots__ = ("_ctx", "update", "update_aad")

    def close(self) -> None:
        self._ctx = self.update = self.update_aad = None


class GcmEncryptStream(_GcmStream):
    """An encryption: ``finalize()`` gives the tag."""

    __slots__ = ()

    def finalize(self, tag: bytes | None = None) -> bytes:
        ctx = self._ctx
        ctx.finalize()
        return ctx.tag


class GcmDecryptStream(_GcmStream):
    """A decryption: ``finalize(tag)`` checks the tag."""

    __slots__ = ()

    def finalize(self, tag: bytes | None = None) -> bytes:
        return self._ctx.finalize_with_tag(bytes(tag or b""))


#: What engines/_contexts.c is built for (its API): a build from other sources is not used.
CONTEXTS_API = 1


def _mode_layout(mode: Any, iv_name: str | None) -> bool:
    """Whether ``mode`` (made by its class's __init__) holds its IV in ``iv_name`` and nothing
    else (nothing at all for None): then engines/_contexts.c makes the class's modes by setting
    that attribute."""
    try:
        names = list(vars(mode))
    except TypeError:  # no __dict__: a compiled mode
        return False
    return names == ([iv_name] if iv_name else [])


def _session_layouts() -> dict[str, tuple[Any, str | None]]:
    """The AES ECB, CBC and CTR names whose modes engines/_contexts.c makes for
    :meth:`SoftwareEngine.session`: name -> (mode class, the attribute its IV goes in)."""
    taken = {}
    for mode_class, iv_name in (
        (modes.ECB, None),
        (modes.CBC, "_initialization_vector"),
        (modes.CTR, "_nonce"),
    ):
        mode = mode_class() if iv_name is None else mode_class(bytes(16))
        if _mode_layout(mode, iv_name):
            for bits in (128, 192, 256):
                taken[f"aes-{bits}-{mode_class.name.lower()}"] = (mode_class, iv_name)
    return taken


def _compiled_contexts() -> Any:
    """engines/_contexts.c, configured, or None (not built, built from other sources,
    ``CRYPTOFFLOAD_PURE_PYTHON`` set, or a `cryptography` whose layout it does not know)."""
    if MAKE_CONTEXT is None or _GCM_FIELDS is None:
        return None
    _contexts = load_extension(
        "cryptoffload.engines._contexts", CONTEXTS_API, "the pure-Python contexts run"
    )
    if _contexts is None:
        return None
    _contexts.configure(
        slow_stream=py_gcm_stream,
        gcm_class=modes.GCM,
        gcm_fields=_GCM_FIELDS,
        gcm_algorithms=_GCM_STREAM_ALGS,
        peek=_KEYED.peek,
        keyed_maker=_keyed_cipher,
        make_encryption=MAKE_CONTEXT[0],
        make_decryption=MAKE_CONTEXT[1],
        session_modes=_session_layouts(),
    )
    return _contexts


def cipher_sessions(session: Any) -> Any:
    """``session`` (a :class:`SoftwareEngine`'s bound ``session``) with its AES ECB, CBC and CTR
    branch compiled where engines/_contexts.c was built (the pass-through engine binds this),
    else ``session`` itself: also for an engine whose ``run`` is its own (a subclass's, or one
    set on it), which :meth:`SoftwareEngine.session` gives no sessions to."""
    engine = getattr(session, "__self__", None)
    if (
        _CONTEXTS is None
        or not isinstance(engine, SoftwareEngine)
        or type(engine).run is not SoftwareEngine.run
        or "run" in vars(engine)
    ):
        return session
    return _CONTEXTS.CipherSessions(session)


def _session_mode(alg: str) -> Any:
    """The mode class :meth:`SoftwareEngine.session` makes ``alg``'s contexts with (None for
    ECB; False: it keeps none, not ECB, CBC or CTR), noted in :data:`_SESSION_MODES`."""
    mode = alg.rsplit("-", 1)[-1]
    mode_class = _MODES[mode] if mode in ("cbc", "ctr") else None if mode == "ecb" else False
    _SESSION_MODES[alg] = mode_class
    return mode_class


def _keyed_cipher(key: bytes, alg: str) -> Any:
    """The `cryptography` algorithm object of a cipher name and key (kept per key)."""
    return block_cipher(alg, key)


#: engines/_contexts.c, configured (None: the pure-Python twins run).
_CONTEXTS = _compiled_contexts()
#: ``gcm_stream(op)``: an engine AEAD stream over OpenSSL's AES-GCM context (see
#: :func:`py_gcm_stream`), compiled where engines/_contexts.c was built: the pass-through
#: engine's ``open_aead_stream``.
gcm_stream: Any = py_gcm_stream if _CONTEXTS is None else _CONTEXTS.open_stream


#: The families :meth:`SoftwareEngine.session` keeps sessions for.
_SESSION_FAMILIES = frozenset({"aead", "cipher", "hash", "mac"})


class _HashSession:
    """A fixed-size hash's session: ``digest(data)`` as :func:`_hash` gives it."""

    __slots__ = ("_make",)

    def __init__(self, alg: str) -> None:
        if _hmac is None:
            _load_stdlib()
        name = HASH_NAMES[alg]
        make = _HASH_CONSTRUCTORS.get(name)
        self._make = make if make is not None else functools.partial(_hashlib.new, name)

    def digest(self, data: bytes) -> bytes:
        return self._make(data).digest()


class _HmacSession:
    """An HMAC's session (its hash's): ``mac(key, data)``, the tag :func:`_mac` gives. OpenSSL's
    HMAC object made fed the message and read (hashlib's one-shot ``hmac_digest`` costs half as
    much again: it looks the hash up on every call)."""

    __slots__ = ("_name", "mac")

    def __init__(self, base: str) -> None:
        if _hmac is None:
            _load_stdlib()
        self._name = name = HASH_NAMES[base]
        try:
            if _hmac_new is None:
                raise LookupError(name)
            _hmac_new(b"", b"", name)
        except (LookupError, _UnsupportedDigest):  # a hash Python's OpenSSL lacks: Python's hmac
            self.mac = self._python_mac
        else:
            self.mac = self._openssl_mac

    def _openssl_mac(self, key: bytes, data: bytes) -> bytes:
        return _hmac_new(key, data, self._name).digest()

    def _python_mac(self, key: bytes, data: bytes) -> bytes:
        return _hmac.digest(key, data, self._name)


def _cipher(op: Any) -> bytes | int:
    if carries(op):
        return _CARRIED.run(op)
    cipher = _whole_cipher(op)
    ctx = cipher.encryptor() if op.kind == "encrypt" else cipher.decryptor()
    out = op.out
    if out is None:
        return ctx.update(op.data) + ctx.finalize()
    n = len(op.data)
    if len(out) >= n + 15:  # cryptography's room rule for update_into (a held-back block)
        ctx.update_into(op.data, out)
    else:
        out[:n] = ctx.update(op.data)
    ctx.finalize()
    return n


#: The AEADs other than GCM and CCM, by the end of their names; all take 16-byte tags.
_AEADS = {"-poly1305": ChaCha20Poly1305, "-ocb": AESOCB3, "gcm-siv": AESGCMSIV}


def _aead(op: Any) -> bytes:
    alg = op.alg
    code = alg[-3]
    if code == "g" and op.tag_length == 16 and alg[0] == "a":  # AES-GCM, gcm_encrypt's first case
        box = _KEYED.get(AESGCM, op.key)
        if op.kind == "encrypt":
            return box.encrypt(op.iv, op.data, op.aad)
        return box.decrypt(op.iv, op.data, op.aad)
    if code == "g":  # -gcm, not -ccm
        fn = gcm_encrypt if op.kind == "encrypt" else gcm_decrypt
        return fn(op.key, op.iv, op.data, op.aad, op.tag_length, op.alg)
    if code != "c":
        return _other_aead(op)
    ccm = _KEYED.get(AESCCM, op.key, op.tag_length)
    if op.kind == "encrypt":
        return ccm.encrypt(op.iv, op.data, op.aad)
    return ccm.decrypt(op.iv, op.data, op.aad)


def _other_aead(op: Any) -> bytes:
    alg = op.alg
    if alg.endswith("-siv") and not alg.endswith("gcm-siv"):
        siv = AESSIV(op.key)
        aad = list(op.aad) if op.aad else None
        return siv.encrypt(op.data, aad) if op.kind == "encrypt" else siv.decrypt(op.data, aad)
    cls = next(c for end, c in _AEADS.items() if alg.endswith(end))
    aead = _KEYED.get(cls, op.key)
    if op.kind == "encrypt":
        return aead.encrypt(op.iv, op.data, op.aad)
    return aead.decrypt(op.iv, op.data, op.aad)


#: hashlib and hmac, imported at the engine's first hash or HMAC: their import (OpenSSL's
#: _hashlib) is a start-up cost of every program that builds a provider.
_hashlib: Any = None
_hmac: Any = None
#: hashlib's named constructors (OpenSSL's), called without hashlib.new's lookup per op; and
#: what hmac.new calls for a hash OpenSSL has, without hmac.new's own frame. All filled with the
#: modules above.
_HASH_CONSTRUCTORS: dict[str, Any] = {}
_hmac_new: Any = None
_UnsupportedDigest: Any = ()


def _load_stdlib() -> None:
    global _hashlib, _hmac, _hmac_new, _UnsupportedDigest
    import hashlib
    import hmac

    try:
        from _hashlib import UnsupportedDigestmodError, hmac_new
    except ImportError:  # a Python without OpenSSL's hashlib: hmac.digest
        pass
    else:
        _hmac_new = hmac_new
        _UnsupportedDigest = UnsupportedDigestmodError
    _HASH_CONSTRUCTORS.update(
        (name, getattr(hashlib, name))
        for name in set(HASH_NAMES.values())
        if name in hashlib.algorithms_guaranteed and callable(getattr(hashlib, name, None))
    )
    _hashlib, _hmac = hashlib, hmac  # _hmac last: its None says nothing is loaded yet


def _hash(op: Any) -> bytes:
    if _hmac is None:
        _load_stdlib()
    name = HASH_NAMES[op.alg]
    make = _HASH_CONSTRUCTORS.get(name)
    state = make(op.data) if make is not None else _hashlib.new(name, op.data)
    return state.digest() if op.length is None else state.digest(op.length)


def _mac(op: Any) -> bytes:
    if op.alg == "poly1305":
        return Poly1305.generate_tag(op.key, op.data)
    kind, base = op.alg.split("-", 1)
    if kind == "hmac":
        if _hmac is None:
            _load_stdlib()
        name = HASH_NAMES[base]
        if _hmac_new is not None:
            try:  # OpenSSL's HMAC object: 0.5 us less than the one-shot hmac_digest
                return _hmac_new(op.key, op.data, name).digest()
            except _UnsupportedDigest:  # a hash Python's OpenSSL lacks: Python's hmac
                pass
        return _hmac.digest(op.key, op.data, name)
    if kind == "cmac":
        ctx = cmac.CMAC(block_cipher(base, op.key))
        ctx.update(op.data)
        return ctx.finalize()
    return gmac_tag(op.key, op.iv, op.data, op.tag_length)


def _rsa(op: Any) -> Any:
    key = op.key
    kind = op.kind
    if kind == "sign":
        return key.sign(op.digest, op.padding, Prehashed(op.hash_alg))
    if kind == "verify":
        pkcs1.check_signature_length(op.signature, key.key_size)
        return key.verify(op.signature, op.digest, op.padding, Prehashed(op.hash_alg))
    if kind == "encrypt":
        return key.encrypt(op.data, op.padding)
    if kind == "decrypt":
        try:
            return key.decrypt(op.data, op.padding)
        except ValueError as exc:  # does not decrypt: the op's answer (errors.NoResult)
            raise NoResult(str(exc)) from None
    # Raw exponentiation: OpenSSL's is not reachable through `cryptography`, so use GMP.
    if op.alg.endswith("-private"):
        numbers = key.private_numbers()
        pub = numbers.public_numbers
        return pkcs1.rsa_private_raw(
            op.value,
            pub.n,
            numbers.d,
            numbers.p,
            numbers.q,
            numbers.dmp1,
            numbers.dmq1,
            numbers.iqmp,
        )
    pub = key.public_numbers()
    return pkcs1.rsa_public_raw(op.value, pub.n, pub.e)


def _ecdsa(op: Any) -> Any:
    if op.kind == "sign":
        algorithm = ec.ECDSA(Prehashed(op.hash_alg), deterministic_signing=op.deterministic)
        return op.key.sign(op.digest, algorithm)
    return op.key.verify(op.signature, op.digest, ec.ECDSA(Prehashed(op.hash_alg)))


def _ecdh(op: Any) -> bytes:
    return op.key.exchange(ec.ECDH(), op.peer)


def _dh(op: Any) -> bytes:
    from cryptoffload.blocks import ffdh  # here: its tables and classes are a start-up's cost

    return ffdh.agree(op.key, op.peer.y)


def _eddsa(op: Any) -> Any:
    if op.kind == "sign":
        return op.key.sign(op.data)
    return op.key.verify(op.signature, op.data)


def _xdh(op: Any) -> bytes:
    try:
        return op.key.exchange(op.peer)
    except ValueError as exc:  # an all-zero agreement: the op's answer (errors.NoResult)
        raise NoResult(str(exc)) from None


def _dsa(op: Any) -> Any:
    if op.kind == "sign":
        return op.key.sign(op.digest, Prehashed(op.hash_alg))
    return op.key.verify(op.signature, op.digest, Prehashed(op.hash_alg))


def _rng(op: Any) -> bytes:
    return os.urandom(op.length)


_AES_KEYED = frozenset({"cipher", "aead", "mac"})
_HANDLERS = {
    "cipher": _cipher,
    "aead": _aead,
    "hash": _hash,
    "mac": _mac,
    "rsa": _rsa,
    "ecdsa": _ecdsa,
    "ecdh": _ecdh,
    "dh": _dh,
    "rng": _rng,
    "eddsa": _eddsa,
    "xdh": _xdh,
    "dsa": _dsa,
    **_software_more.HANDLERS,
}
