"""Random operations of every family, valid and invalid, replayable from (seed, index)."""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gmpy2
from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives.asymmetric import ec as c_ec
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric import rsa as c_rsa
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed

from cryptoffload import cmac, dh, ec, gmac, hashes, hmac, modes, rsa
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.blocks.curves import CRYPTOGRAPHY_CLASSES, IN_CRYPTOGRAPHY
from cryptoffload.blocks.ffdhe import FFDHE_GROUPS
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.core.names import HASH_CLASSES
from cryptoffload.core.provider import Provider
from cryptoffload.drbg import Drbg

#: A case's result as compared: ("ok", value) or ("raised", exception class name).
Outcome = tuple[str, Any]


@dataclass(frozen=True)
class Case:
    """One random operation of a family (a generator's name in :data:`GENERATORS`):
    ``call(provider)`` performs it through the API and returns a value
    that any two correct providers agree on (random outputs already checked and reduced, e.g. a
    signature to "verifies"); ``text`` says what it is, with sizes and no key bytes."""

    family: str
    alg: str
    text: str
    call: Callable[[Provider], Any]


def outcome(case: Case, provider: Provider) -> Outcome:
    """The case's value through ``provider``, or the class of what it raised."""
    try:
        return ("ok", plain(case.call(provider)))
    except Exception as exc:
        return ("raised", type(exc).__name__)


def plain(value: Any) -> Any:
    """A value reduced to what comparing two providers' answers needs: bytes keep their type's
    name (an engine must not turn `bytes` into a `bytearray` on the way out), exceptions (batch
    items) their class name; lists and tuples element by element."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return (type(value).__name__, bytes(value))
    if isinstance(value, BaseException):
        return ("raised", type(value).__name__)
    if isinstance(value, (list, tuple)):
        return tuple(plain(v) for v in value)
    return value


def steps(*calls: Callable[[], Any]) -> tuple[list[Any], str | None]:
    """Run ``calls`` in order: what each returned until one raised, and that exception's class
    (a context that fails half way must release the same output on every provider)."""
    done: list[Any] = []
    for call in calls:
        try:
            done.append(plain(call()))
        except Exception as exc:
            return done, type(exc).__name__
    return done, None


# -- keys, made from the seed so that a reproducer replays exactly ------------------------------

E = 65537


class Keys:
    """Key pools drawn from one seed: RSA per size, EC per curve, DH per group (lazily)."""

    RSA_BITS = (1024, 2048, 3072, 4096)

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def _rng(self, what: str) -> random.Random:
        return random.Random(f"keys:{self.seed}:{what}")

    @functools.cache  # noqa: B019 - one pool per campaign, kept for its life
    def rsa(self, bits: int) -> c_rsa.RSAPrivateKey:
        r = self._rng(f"rsa{bits}")
        half = bits // 2
        while True:
            p = int(gmpy2.next_prime(r.getrandbits(half) | (3 << (half - 2))))
            q = int(gmpy2.next_prime(r.getrandbits(half) | (3 << (half - 2))))
            n = p * q
            if p == q or n.bit_length() != bits or gmpy2.gcd(E, (p - 1) * (q - 1)) != 1:
                continue
            d = pow(E, -1, (p - 1) * (q - 1) // int(gmpy2.gcd(p - 1, q - 1)))
            numbers = c_rsa.RSAPrivateNumbers(
                p, q, d, d % (p - 1), d % (q - 1), pow(q, -1, p), c_rsa.RSAPublicNumbers(E, n)
            )
            return numbers.private_key()

    @functools.cache  # noqa: B019
    def ec(self, curve: str) -> c_ec.EllipticCurvePrivateKey:
        return self.ec_scalar(curve, self._rng(f"ec{curve}"))

    @staticmethod
    def ec_scalar(curve: str, r: random.Random) -> c_ec.EllipticCurvePrivateKey:
        cls = CURVES[curve]
        order = _ORDERS[curve]
        return c_ec.derive_private_key(r.randrange(1, order), cls())

    @functools.cache  # noqa: B019
    def dh(self, group: str) -> tuple[int, int]:
        return self.dh_key(group, self._rng(f"dh{group}"))

    @staticmethod
    def dh_key(group: str, r: random.Random) -> tuple[int, int]:
        """A key pair (x, y) in ``group``, with a 256-bit private value."""
        g = FFDHE_GROUPS[group]
        x = r.getrandbits(256) | 1 << 255
        return x, int(gmpy2.powmod(g.g, x, g.p))


def dh_private(group: str, pair: tuple[int, int], provider: Provider) -> dh.DHPrivateKey:
    """The private key of ``pair`` in ``group`` on ``provider``."""
    g = FFDHE_GROUPS[group]
    public = dh.DHPublicNumbers(pair[1], dh.DHParameterNumbers(g.p, g.g))
    return dh.DHPrivateNumbers(pair[0], public).private_key(provider=provider)


#: The curve table's curves that the installed `cryptography` has, by our name.
CURVES: dict[str, type[c_ec.EllipticCurve]] = {
    name: CRYPTOGRAPHY_CLASSES[c.openssl_name] for name, c in IN_CRYPTOGRAPHY.items()
}


def _orders() -> dict[str, int]:
    from cryptoffload.blocks.curves import CURVES as PARAMS

    return {name: PARAMS[name].n for name in CURVES}


_ORDERS = _orders()

# -- sizes and buffers ---------------------------------------------------------------------------

#: Request limits of the engines (AF_ALG and /dev/crypto: 64 KiB; cryptodev's AAD: a page):
#: sizes at, below and above them are drawn now and then.
EDGES = (4095, 4096, 4097, 65535, 65536, 65537)


def size(r: random.Random, top: int = 4096) -> int:
    """A payload length: 0 and the block edges often, short and medium ones mostly, and now
    and then one at an engine's request limit."""
    pick = r.random()
    if pick < 0.15:
        return r.choice((0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65))
    if pick < 0.55:
        return r.randint(0, 64)
    if pick < 0.97:
        return r.randint(0, top)
    return r.choice(EDGES)


def buffer(r: random.Random, data: bytes) -> Any:
    """``data`` as bytes mostly, else as a bytearray or a memoryview (all bytes-like)."""
    pick = r.random()
    if pick < 0.8:
        return data
    return bytearray(data) if pick < 0.9 else memoryview(data)


def not_bytes(r: random.Random) -> Any:
    """Something that is not bytes-like (a TypeError wherever data is expected)."""
    return r.choice(("text", 12345, None, [1, 2, 3], 1.5))


def flip(r: random.Random, data: bytes) -> tuple[bytes, str]:
    """``data`` with one bit changed (or, if empty, one byte added), and where, in words."""
    if not data:
        return b"\x00", "a byte added"
    at = r.randrange(len(data))
    changed = bytearray(data)
    changed[at] ^= 1 << r.randrange(8)
    return bytes(changed), f"byte {at} flipped"


def split(r: random.Random, data: bytes) -> list[bytes]:
    """``data`` in 1 to 4 random pieces (empty ones included)."""
    cuts = sorted(r.randint(0, len(data)) for _ in range(r.randint(0, 3)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def aes_key(r: random.Random, valid: float = 0.92) -> tuple[Any, str]:
    """An AES key (16, 24 or 32 bytes) or, now and then, one of a wrong length or type."""
    if r.random() < valid:
        n = r.choice((16, 24, 32))
        return r.randbytes(n), f"{n}-byte key"
    if r.random() < 0.8:
        n = r.choice((0, 1, 8, 15, 17, 20, 31, 33, 40, 64))
        return r.randbytes(n), f"{n}-byte key"
    return "a text key", "a str key"


# -- AEAD ------------------------------------------------------------------------------------------


def gen_aead(r: random.Random, keys: Keys) -> Case:
    gcm = r.random() < 0.6
    cls = AESGCM if gcm else AESCCM
    key, key_text = aes_key(r)
    if gcm:
        tag = r.choice((4, 8, 12, 13, 14, 15, 16, 16, 16)) if r.random() < 0.9 else r.randint(0, 17)
        nonce_len = 12 if r.random() < 0.6 else r.randint(0, 140)
    else:
        tag = r.choice((4, 6, 8, 10, 12, 14, 16)) if r.random() < 0.9 else r.randint(0, 17)
        nonce_len = r.randint(7, 13) if r.random() < 0.8 else r.randint(0, 16)
    nonce = r.randbytes(nonce_len)
    data = r.randbytes(size(r))
    aad_pick = r.random()
    aad = (
        None
        if aad_pick < 0.3
        else b""
        if aad_pick < 0.4
        else r.randbytes(r.choice((4095, 4096, 4097, 5000)))
        if aad_pick < 0.43
        else r.randbytes(r.randint(1, 64))
    )
    name = cls.__name__
    alg = f"aes-{len(key) * 8}-{'gcm' if gcm else 'ccm'}" if isinstance(key, bytes) else ""
    head = f"{name}({key_text}, tag_length={tag})"
    what = r.random()
    aad_text = "None" if aad is None else f"{len(aad)} B"

    def make(p: Provider) -> Any:
        return cls(key, tag, provider=p)

    if what < 0.3:
        data_arg = buffer(r, data) if r.random() < 0.97 else not_bytes(r)
        text = f"{head}.encrypt(nonce {nonce_len} B, {len(data)} B, aad {aad_text})"
        return Case("aead", alg, text, lambda p: make(p).encrypt(nonce, data_arg, aad))
    sealed = _seal(cls, key, tag, nonce, data, aad)
    if what < 0.75:
        change = r.random()
        if sealed is None or change < 0.1:
            body, how = r.randbytes(size(r, 256)), "random bytes"
        elif change < 0.55:
            body, how = sealed, "genuine"
        elif change < 0.85:
            body, how = flip(r, sealed)
        else:
            cut = r.randint(0, len(sealed))
            body, how = sealed[:cut], f"cut to {cut} B"
        aad2 = aad
        if r.random() < 0.1:
            aad2 = (aad or b"") + b"!"
            how += ", aad changed"
        text = f"{head}.decrypt(nonce {nonce_len} B, {len(body)} B {how}, aad {aad_text})"
        body_arg = buffer(r, body)
        return Case("aead", alg, text, lambda p: make(p).decrypt(nonce, body_arg, aad2))
    items = []
    words = []
    for _ in range(r.randint(1, 6)):
        n_len = nonce_len if r.random() < 0.8 else r.randint(0, 20)
        item_nonce, msg = r.randbytes(n_len), r.randbytes(size(r, 512))
        items.append((item_nonce, msg, aad))
        words.append(f"{n_len}/{len(msg)}")
    if what < 0.87:
        text = f"{head}.encrypt_many([nonce/data B: {', '.join(words)}], aad {aad_text})"
        return Case("aead", alg, text, lambda p: make(p).encrypt_many(items))
    opened = []
    for i, (item_nonce, msg, item_aad) in enumerate(items):
        sealed_item = _seal(cls, key, tag, item_nonce, msg, item_aad) or msg
        if r.random() < 0.3:
            sealed_item, how = flip(r, sealed_item)
            words[i] += f" ({how})"
        opened.append((item_nonce, sealed_item, item_aad))
    text = f"{head}.decrypt_many([nonce/data B: {', '.join(words)}], aad {aad_text})"
    return Case("aead", alg, text, lambda p: make(p).decrypt_many(opened))


@functools.cache
def _software() -> Provider:
    return Provider([])


def _seal(cls: Any, key: Any, tag: int, nonce: bytes, data: bytes, aad: Any) -> bytes | None:
    try:
        return cls(key, tag, provider=_software()).encrypt(nonce, data, aad)
    except Exception:
        return None


def gen_more_aead(r: random.Random, keys: Keys) -> Case:
    """ChaCha20-Poly1305, AES-OCB3, AES-GCM-SIV and AES-SIV, where the API offers them."""
    from cryptoffload import aead

    offered = [
        n for n in ("ChaCha20Poly1305", "AESOCB3", "AESGCMSIV", "AESSIV") if hasattr(aead, n)
    ]
    if not offered:
        return gen_aead(r, keys)
    name = r.choice(offered)
    cls = getattr(aead, name)
    sizes = {"ChaCha20Poly1305": (32,), "AESOCB3": (16, 24, 32), "AESGCMSIV": (16, 32)}
    valid = sizes.get(name, (32, 48, 64))
    n = r.choice(valid) if r.random() < 0.95 else r.choice((0, 8, 20, 40))
    key = r.randbytes(n)
    data = r.randbytes(size(r))
    head = f"{name}({n}-byte key)"
    if name == "AESSIV":
        aad: Any = [r.randbytes(r.randint(0, 30)) for _ in range(r.randint(0, 3))] or None
        args: tuple[Any, ...] = (aad,)
        words = f"aad {'None' if aad is None else len(aad)} items"
    else:
        nonce_len = r.choice((12, 12, 13, 15)) if r.random() < 0.85 else r.randint(0, 20)
        aad = None if r.random() < 0.4 else r.randbytes(r.randint(0, 40))
        args = (r.randbytes(nonce_len),)
        words = f"nonce {nonce_len} B, aad {'None' if aad is None else len(aad)} B"

    def call(p: Provider, kind: str, body: Any) -> Any:
        obj = cls(key, provider=p)
        if name == "AESSIV":
            return getattr(obj, kind)(body, *args)
        return getattr(obj, kind)(args[0], body, aad)

    if r.random() < 0.4:
        text = f"{head}.encrypt({len(data)} B, {words})"
        return Case("more-aead", name, text, lambda p: call(p, "encrypt", data))
    try:
        sealed = call(_software(), "encrypt", data)
        how = "genuine"
    except Exception:
        sealed, how = r.randbytes(size(r, 64)), "random"
    if r.random() < 0.4:
        sealed, how = flip(r, sealed)
    elif r.random() < 0.1:
        sealed, how = sealed[: r.randint(0, 20)], "cut short"
    text = f"{head}.decrypt({len(sealed)} B {how}, {words})"
    return Case("more-aead", name, text, lambda p: call(p, "decrypt", sealed))


# -- cipher modes through Cipher contexts ----------------------------------------------------------

_MODES: dict[str, Any] = {
    name: getattr(modes, cls)
    for name, cls in (
        ("ecb", "ECB"),
        ("cbc", "CBC"),
        ("ctr", "CTR"),
        ("cfb", "CFB"),
        ("cfb8", "CFB8"),
        ("ofb", "OFB"),
        ("xts", "XTS"),
        ("gcm", "GCM"),
    )
    if hasattr(modes, cls)
}
#: Initial counter blocks that wrap within a few blocks (CTR counts over all 128 bits).
_CTR_WRAPS = (b"\xff" * 16, bytes(8) + b"\xff" * 8, b"\xff" * 15 + b"\xf0")


def gen_cipher(r: random.Random, keys: Keys) -> Case:
    mode = r.choice([m for m in _MODES if m != "xts"] * 3 + ["xts"] * ("xts" in _MODES))
    encrypt = r.random() < 0.5
    if mode == "xts":
        n = r.choice((32, 64)) if r.random() < 0.9 else r.choice((16, 48))
        key = r.randbytes(n)
        if r.random() < 0.9 and n in (32, 64):
            key = key[: n // 2] + bytes(a ^ 1 for a in key[n // 2 :])  # halves must differ
        key_text = f"{n}-byte key"
    else:
        key, key_text = aes_key(r)
    iv_pick = r.random()
    if mode == "ctr" and iv_pick < 0.2:
        iv = r.choice(_CTR_WRAPS)
    elif mode == "gcm":
        iv = r.randbytes(12 if iv_pick < 0.8 else r.randint(0, 140))
    else:
        iv = r.randbytes(16 if iv_pick < 0.9 else r.choice((0, 8, 15, 17, 32)))
    data = r.randbytes(size(r))
    if mode in ("ecb", "cbc") and r.random() < 0.7:
        data = data[: len(data) // 16 * 16]
    if mode == "xts" and len(data) < 16 and r.random() < 0.8:
        data += r.randbytes(16)
    pieces = split(r, data)
    into = r.random() < 0.3
    short = into and r.random() < 0.1
    bits = len(key) * 8 if isinstance(key, bytes) else 0
    alg = f"aes-{bits // 2 if mode == 'xts' else bits}-{mode}"
    verb = "encryptor" if encrypt else "decryptor"
    how = "update_into" + (" (buffer short)" if short else "") if into else "update"
    sizes = "/".join(str(len(p)) for p in pieces)
    text = f"Cipher(AES({key_text}), {mode.upper()}(iv {len(iv)} B)).{verb}() {how} {sizes} B"

    if mode == "gcm":
        tag_len = r.choice((16, 16, 12, 8, 4)) if r.random() < 0.9 else r.randint(0, 17)
        aad = r.randbytes(r.randint(0, 40))
        sealed_tag = r.randbytes(tag_len)
        if not encrypt and r.random() < 0.7:
            sealed_tag = _gcm_tag(key, iv, data, aad, tag_len) or sealed_tag
        text += f", aad {len(aad)} B" + ("" if encrypt else f", tag {tag_len} B")

        def run_gcm(p: Provider) -> Any:
            ctx = Cipher(algorithms.AES(key), _MODES["gcm"](iv), provider=p)
            c = ctx.encryptor() if encrypt else ctx.decryptor()
            calls: list[Callable[[], Any]] = [lambda: c.authenticate_additional_data(aad)]
            calls += [lambda piece=piece: c.update(piece) for piece in pieces]
            if encrypt:
                calls += [c.finalize, lambda: c.tag]
            else:
                calls.append(lambda: c.finalize_with_tag(sealed_tag))
            return steps(*calls)

        return Case("cipher", alg, text, run_gcm)

    def run(p: Provider) -> Any:
        mode_obj = _MODES[mode]() if mode == "ecb" else _MODES[mode](iv)
        cipher = Cipher(algorithms.AES(key), mode_obj, provider=p)
        c = cipher.encryptor() if encrypt else cipher.decryptor()
        calls: list[Callable[[], Any]] = []
        for piece in pieces:
            if into:
                room = len(piece) + (15 if not short else 0) - (1 if short and piece else 0)

                def update_into(piece: bytes = piece, room: int = max(room, 0)) -> Any:
                    buf = bytearray(room)
                    n = c.update_into(piece, buf)
                    return bytes(buf[:n])

                calls.append(update_into)
            else:
                calls.append(lambda piece=piece: c.update(piece))
        calls.append(c.finalize)
        return steps(*calls)

    return Case("cipher", alg, text, run)


def _gcm_tag(key: Any, iv: bytes, data: bytes, aad: bytes, tag_len: int) -> bytes | None:
    try:
        sealed = AESGCM(key, 16, provider=_software()).encrypt(iv, data, aad)
    except Exception:
        return None
    return sealed[-16:][:tag_len]


# -- hashes and MACs -------------------------------------------------------------------------------

HASHES = dict(HASH_CLASSES)


def _more_hashes() -> dict[str, Callable[[random.Random], Any]]:
    """The API's hashes beyond SHA-1/SHA-2, where it offers them (SHAKE: a random length)."""
    out: dict[str, Callable[[random.Random], Any]] = {}
    fixed = {"sha3-224": "SHA3_224", "sha3-256": "SHA3_256", "sha3-384": "SHA3_384"}
    fixed |= {"sha3-512": "SHA3_512", "sm3": "SM3", "md5": "MD5"}
    for name, attr in fixed.items():
        cls = getattr(hashes, attr, None)
        if cls is not None:
            out[name] = lambda r, cls=cls: cls()
    if hasattr(hashes, "BLAKE2b"):
        out["blake2b"] = lambda r: hashes.BLAKE2b(64)
        out["blake2s"] = lambda r: hashes.BLAKE2s(32)
    return out


#: Every hash of fixed size, by name: what HMAC takes too.
FIXED_HASHES: dict[str, Callable[[random.Random], Any]] = {
    name: (lambda r, cls=cls: cls()) for name, cls in HASH_CLASSES.items()
} | _more_hashes()
#: Every hash of the API, extendable-output functions with a random length.
ALL_HASHES = dict(FIXED_HASHES)
if hasattr(hashes, "SHAKE128"):
    ALL_HASHES["shake128"] = lambda r: hashes.SHAKE128(r.randint(1, 100))
    ALL_HASHES["shake256"] = lambda r: hashes.SHAKE256(r.randint(1, 100))


def _message(r: random.Random) -> tuple[Any, str]:
    if r.random() < 0.03:
        bad = not_bytes(r)
        return bad, f"a {type(bad).__name__}"
    data = r.randbytes(size(r))
    return buffer(r, data), f"{len(data)} B"


def _stream(ctx_of: Callable[[], Any], pieces: list[bytes], fork_at: int, end: str, tag: Any):
    """Feed ``pieces`` to a fresh context, copying it before piece ``fork_at``; ``end`` is
    ``finalize`` or ``verify`` (with ``tag``)."""
    state: dict[str, Any] = {}

    def start() -> None:
        state["ctx"] = ctx_of()

    calls: list[Callable[[], Any]] = [start]
    for i, piece in enumerate(pieces):
        if i == fork_at:
            calls.append(lambda: state.__setitem__("fork", state["ctx"].copy()))
        calls.append(lambda piece=piece: state["ctx"].update(piece))
    if end == "verify":
        calls.append(lambda: state["ctx"].verify(tag))
    else:
        calls.append(lambda: state["ctx"].finalize())
    calls.append(lambda: state["fork"].finalize() if "fork" in state else None)
    return steps(*calls)


def gen_hash(r: random.Random, keys: Keys) -> Case:
    name = r.choice(sorted(ALL_HASHES))
    algorithm = ALL_HASHES[name](r)
    if name.startswith("shake"):
        name = f"{name}({algorithm.digest_size} B)"
    what = r.random()
    if what < 0.35:
        data, data_text = _message(r)
        text = f"hashes.digest({data_text}, {name})"
        return Case("hash", name, text, lambda p: hashes.digest(data, algorithm, provider=p))
    if what < 0.5:
        messages = [_message(r) for _ in range(r.randint(1, 6))]
        text = f"hashes.digest_many([{', '.join(t for _, t in messages)}], {name})"
        items = [m for m, _ in messages]
        return Case("hash", name, text, lambda p: hashes.digest_many(items, algorithm, provider=p))
    data = r.randbytes(size(r))
    pieces = split(r, data)
    fork_at = r.randint(0, len(pieces))
    sizes = "/".join(str(len(p)) for p in pieces)
    text = f"Hash({name}) update {sizes} B, copy before piece {fork_at}"

    def run(p: Provider) -> Any:
        return _stream(lambda: hashes.Hash(algorithm, provider=p), pieces, fork_at, "", None)

    return Case("hash", name, text, run)


def gen_hmac(r: random.Random, keys: Keys) -> Case:
    name = r.choice(sorted(FIXED_HASHES))
    algorithm = FIXED_HASHES[name](r)
    key_len = (
        r.choice((0, 1, 16, 32, 64, 65, 128, 129, 200)) if r.random() < 0.5 else r.randint(0, 200)
    )
    key: Any = r.randbytes(key_len)
    key_text = f"{key_len}-byte key"
    if r.random() < 0.03:
        key, key_text = "a text key", "a str key"
    alg = f"hmac-{name}"
    if r.random() < 0.2:
        messages = [_message(r) for _ in range(r.randint(1, 6))]
        items = [m for m, _ in messages]
        text = f"hmac.digest_many({key_text}, [{', '.join(t for _, t in messages)}], {name})"
        return Case(
            "hmac", alg, text, lambda p: hmac.digest_many(key, items, algorithm, provider=p)
        )
    data = r.randbytes(size(r))
    pieces = split(r, data)
    fork_at = r.randint(0, len(pieces))
    end, tag, tag_text = _ending(r, lambda: _hmac_tag(key, data, algorithm))
    sizes = "/".join(str(len(p)) for p in pieces)
    text = f"HMAC({key_text}, {name}) update {sizes} B, copy before piece {fork_at}, {tag_text}"

    def run(p: Provider) -> Any:
        return _stream(lambda: hmac.HMAC(key, algorithm, provider=p), pieces, fork_at, end, tag)

    return Case("hmac", alg, text, run)


def _ending(r: random.Random, tag_of: Callable[[], bytes | None]) -> tuple[str, Any, str]:
    """finalize, or verify with the right tag, an altered one, a short one or a non-bytes one."""
    pick = r.random()
    if pick < 0.5:
        return "finalize", None, "finalize"
    right = tag_of() or b""
    if pick < 0.75:
        return "verify", right, "verify(the right tag)"
    if pick < 0.9:
        altered, how = flip(r, right)
        return "verify", altered, f"verify(tag {how})"
    if pick < 0.97:
        return "verify", right[:-1], "verify(tag cut by one byte)"
    return "verify", "text", "verify(a str)"


def _hmac_tag(key: Any, data: bytes, algorithm: Any) -> bytes | None:
    try:
        ctx = hmac.HMAC(key, algorithm, provider=_software())
        ctx.update(data)
        return ctx.finalize()
    except Exception:
        return None


def gen_cmac(r: random.Random, keys: Keys) -> Case:
    key, key_text = aes_key(r)
    data = r.randbytes(size(r))
    pieces = split(r, data)
    fork_at = r.randint(0, len(pieces))
    alg = f"cmac-aes-{len(key) * 8}" if isinstance(key, bytes) else ""

    def tag_of() -> bytes | None:
        try:
            ctx = cmac.CMAC(algorithms.AES(key), provider=_software())
            ctx.update(data)
            return ctx.finalize()
        except Exception:
            return None

    end, tag, tag_text = _ending(r, tag_of)
    sizes = "/".join(str(len(p)) for p in pieces)
    text = f"CMAC(AES({key_text})) update {sizes} B, copy before piece {fork_at}, {tag_text}"

    def run(p: Provider) -> Any:
        return _stream(
            lambda: cmac.CMAC(algorithms.AES(key), provider=p), pieces, fork_at, end, tag
        )

    return Case("cmac", alg, text, run)


def gen_gmac(r: random.Random, keys: Keys) -> Case:
    key, key_text = aes_key(r)
    nonce = r.randbytes(12 if r.random() < 0.7 else r.randint(0, 140))
    tag_len = r.choice((16, 16, 12, 8, 4, 13)) if r.random() < 0.9 else r.randint(0, 17)
    data = r.randbytes(size(r))
    pieces = split(r, data)
    alg = f"gmac-aes-{len(key) * 8}" if isinstance(key, bytes) else ""

    def tag_of() -> bytes | None:
        try:
            ctx = gmac.GMAC(key, nonce, tag_len, provider=_software())
            ctx.update(data)
            return ctx.finalize()
        except Exception:
            return None

    end, tag, tag_text = _ending(r, tag_of)
    sizes = "/".join(str(len(p)) for p in pieces)
    text = (
        f"GMAC({key_text}, nonce {len(nonce)} B, tag_length={tag_len}) update {sizes} B, {tag_text}"
    )

    def run(p: Provider) -> Any:
        state: dict[str, Any] = {}
        calls: list[Callable[[], Any]] = [
            lambda: state.__setitem__("ctx", gmac.GMAC(key, nonce, tag_len, provider=p))
        ]
        calls += [lambda piece=piece: state["ctx"].update(piece) for piece in pieces]
        calls.append(
            lambda: state["ctx"].verify(tag) if end == "verify" else state["ctx"].finalize()
        )
        return steps(*calls)

    return Case("gmac", alg, text, run)


# -- RSA -------------------------------------------------------------------------------------------

_SIGN_HASHES = ("sha1", "sha224", "sha256", "sha384", "sha512", "sha512-224", "sha512-256")
_OAEP_HASHES = ("sha1", "sha224", "sha256", "sha384", "sha512")


def _rsa_bits(r: random.Random) -> int:
    return r.choices(Keys.RSA_BITS, weights=(3, 6, 2, 1))[0]


def _pss(r: random.Random, key_bits: int, hash_name: str) -> tuple[Any, str]:
    mgf = r.choice(_SIGN_HASHES)
    salt_pick = r.random()
    if salt_pick < 0.3:
        salt, salt_text = padding.PSS.DIGEST_LENGTH, "DIGEST_LENGTH"
    elif salt_pick < 0.5:
        salt, salt_text = padding.PSS.MAX_LENGTH, "MAX_LENGTH"
    else:
        salt = r.choice((0, 1, 20, 32, 64, key_bits // 8)) if r.random() < 0.5 else r.randint(0, 80)
        salt_text = str(salt)
    return padding.PSS(padding.MGF1(HASHES[mgf]()), salt), f"PSS(MGF1({mgf}), salt {salt_text})"


def gen_rsa(r: random.Random, keys: Keys) -> Case:
    bits = _rsa_bits(r)
    raw_key = keys.rsa(bits)
    public = raw_key.public_key()
    n = public.public_numbers().n
    hname = r.choice(_SIGN_HASHES)
    algorithm: Any = HASHES[hname]()
    what = r.random()
    priv_alg, pub_alg = f"rsa-{bits}-private", f"rsa-{bits}-public"

    if what < 0.45:  # sign / verify
        pss = r.random() < 0.5
        pad, pad_text = _pss(r, bits, hname) if pss else (padding.PKCS1v15(), "PKCS1v15")
        message = r.randbytes(size(r, 300))
        data: Any = message
        hash_text = hname
        if r.random() < 0.25:
            digest_len = algorithm.digest_size if r.random() < 0.8 else r.randint(0, 70)
            data = r.randbytes(digest_len)
            algorithm = Prehashed(algorithm)
            hash_text = f"Prehashed({hname}), {digest_len}-byte digest"
        head = f"rsa-{bits}"
        if what < 0.2:
            text = f"{head}.sign({len(data)} B, {pad_text}, {hash_text})"

            def sign(p: Provider) -> Any:
                signature = rsa.RSAPrivateKey(raw_key, provider=p).sign(data, pad, algorithm)
                if pss:  # random salt: the answer is that it verifies
                    check = padding.PSS(pad._mgf, padding.PSS.AUTO)
                    public.verify(signature, data, check, algorithm)
                    return "verifies"
                return signature

            return Case("rsa", priv_alg, text, sign)
        signature = _rsa_sign(raw_key, data, pad, algorithm)
        change = r.random()
        if signature is None or change < 0.1:
            signature, how = (
                r.randbytes(r.choice((bits // 8, bits // 8 - 1, bits // 8 + 1, 0))),
                "random",
            )
        elif change < 0.5:
            how = "genuine"
        elif change < 0.75:
            signature, how = flip(r, signature)
        elif change < 0.85:
            signature, how = signature[1:], "first byte cut"
        elif change < 0.92:
            signature, how = n.to_bytes(bits // 8, "big"), "equal to n"
        else:
            how = "genuine, message changed"
            data = flip(r, bytes(data))[0] if not isinstance(algorithm, Prehashed) else data
        sig = buffer(r, signature)
        text = f"{head}.verify(signature {how}, {len(data)} B, {pad_text}, {hash_text})"
        return Case(
            "rsa",
            pub_alg,
            text,
            lambda p: rsa.RSAPublicKey(public, provider=p).verify(sig, data, pad, algorithm),
        )
    if what < 0.7:  # encrypt / decrypt
        if r.random() < 0.5:
            oh = r.choice(_OAEP_HASHES) if r.random() < 0.95 else "sha3-256"
            mh = r.choice(_OAEP_HASHES)
            label = None if r.random() < 0.6 else r.randbytes(r.randint(0, 20))
            hash_cls = getattr(c_hashes, oh.upper().replace("-", "_"))
            pad = padding.OAEP(padding.MGF1(HASHES[mh]()), hash_cls(), label)
            pad_text = f"OAEP(MGF1({mh}), {oh}, label {'None' if label is None else len(label)})"
            room = bits // 8 - 2 * hash_cls.digest_size - 2
        else:
            pad, pad_text, room = padding.PKCS1v15(), "PKCS1v15", bits // 8 - 11
        if what < 0.55:
            length = (
                r.choice((0, 1, max(room, 0), room + 1))
                if r.random() < 0.4
                else r.randint(0, max(room, 0))
            )
            message = r.randbytes(max(length, 0))
            text = f"rsa-{bits}.encrypt({len(message)} B, {pad_text})"

            def encrypt(p: Provider) -> Any:
                sealed = rsa.RSAPublicKey(public, provider=p).encrypt(message, pad)
                return ("decrypts to", raw_key.decrypt(sealed, pad))

            return Case("rsa", pub_alg, text, encrypt)
        message = r.randbytes(r.randint(0, max(room, 0)))
        try:
            sealed = public.encrypt(message, pad)
            how = "genuine"
        except Exception:
            sealed, how = r.randbytes(bits // 8), "random"
        change = r.random()
        if change < 0.25:
            sealed, how = flip(r, sealed)
        elif change < 0.3:
            sealed, how = sealed[:-1], "last byte cut"
        elif change < 0.35:
            sealed, how = (
                (n + 1).to_bytes(bits // 8 + 1, "big")[-(bits // 8) :],
                "n + 1 (mod 2^bits)",
            )
        text = f"rsa-{bits}.decrypt({len(sealed)} B {how}, {pad_text})"
        return Case(
            "rsa",
            priv_alg,
            text,
            lambda p: rsa.RSAPrivateKey(raw_key, provider=p).decrypt(sealed, pad),
        )
    pick = r.random()
    if pick < 0.7:
        value: Any = r.randrange(1, n)
        value_text = "in range"
    elif pick < 0.95:
        value, value_text = r.choice(
            ((0, "0"), (1, "1"), (n - 1, "n - 1"), (n, "n"), (n + 1, "n + 1"), (-1, "-1"))
        )
    else:
        value, value_text = r.choice(((1.5, "a float"), (True, "True"), ("7", "a str")))
    private = r.random() < 0.5
    text = f"rsa-{bits}.raw_{'private' if private else 'public'}({value_text})"

    def raw(p: Provider) -> Any:
        key = rsa.RSAPrivateKey(raw_key, provider=p)
        return key.raw_private(value) if private else key.public_key().raw_public(value)

    return Case("rsa", priv_alg if private else pub_alg, text, raw)


def _rsa_sign(raw_key: Any, data: Any, pad: Any, algorithm: Any) -> bytes | None:
    try:
        return raw_key.sign(data, pad, algorithm)
    except Exception:
        return None


# -- EC, DH, DRBG ----------------------------------------------------------------------------------


def gen_ecdsa(r: random.Random, keys: Keys) -> Case:
    curve = r.choice(sorted(CURVES))
    raw_key = keys.ec(curve)
    public = raw_key.public_key()
    hname = r.choice(_SIGN_HASHES)
    algorithm: Any = HASHES[hname]()
    data: Any = r.randbytes(size(r, 300))
    hash_text = hname
    if r.random() < 0.2:
        digest_len = algorithm.digest_size if r.random() < 0.8 else r.randint(0, 70)
        data = r.randbytes(digest_len)
        algorithm = Prehashed(algorithm)
        hash_text = f"Prehashed({hname}), {digest_len}-byte digest"
    deterministic = r.random() < 0.3
    scheme = c_ec.ECDSA(algorithm, deterministic_signing=deterministic)
    if r.random() < 0.35:
        text = f"ecdsa-{curve}.sign({len(data)} B, {hash_text}, deterministic={deterministic})"

        def sign(p: Provider) -> Any:
            signature = ec.EllipticCurvePrivateKey(raw_key, provider=p).sign(data, scheme)
            if deterministic:  # RFC 6979: the same signature from every correct signer
                return signature
            public.verify(signature, data, c_ec.ECDSA(algorithm))
            return "verifies"

        return Case("ecdsa", f"ecdsa-{curve}-sign", text, sign)
    try:
        signature = raw_key.sign(data, c_ec.ECDSA(algorithm))
        how = "genuine"
    except Exception:
        signature, how = r.randbytes(70), "random"
    change = r.random()
    if change < 0.25:
        signature, how = flip(r, signature)
    elif change < 0.32:
        signature, how = r.randbytes(r.randint(0, 80)), "random bytes"
    elif change < 0.38:
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

        order = _ORDERS[curve]
        rs = r.choice(((0, 1), (1, 0), (order, 1), (1, order), (order + 1, 5)))
        signature, how = encode_dss_signature(*rs), "r or s out of range"
    elif change < 0.42 and not isinstance(algorithm, Prehashed):
        data, how = flip(r, bytes(data))[0], "genuine, message changed"
    text = f"ecdsa-{curve}.verify(signature {how}, {len(data)} B, {hash_text})"
    return Case(
        "ecdsa",
        f"ecdsa-{curve}-verify",
        text,
        lambda p: ec.EllipticCurvePublicKey(public, provider=p).verify(
            signature, data, c_ec.ECDSA(algorithm)
        ),
    )


def gen_ecdh(r: random.Random, keys: Keys) -> Case:
    curve = r.choice(sorted(CURVES))
    raw_key = keys.ec(curve)
    if r.random() < 0.9:
        peer, how = Keys.ec_scalar(curve, r).public_key(), "a peer on the curve"
    else:
        other = r.choice([c for c in CURVES if c != curve])
        peer, how = Keys.ec_scalar(other, r).public_key(), f"a peer on {other}"
    text = f"ecdh-{curve}.exchange({how})"
    return Case(
        "ecdh",
        f"ecdh-{curve}",
        text,
        lambda p: ec.EllipticCurvePrivateKey(raw_key, provider=p).exchange(c_ec.ECDH(), peer),
    )


_GROUP_WEIGHTS = {"ffdhe2048": 8, "ffdhe3072": 3, "ffdhe4096": 2, "ffdhe6144": 1, "ffdhe8192": 1}


def gen_dh(r: random.Random, keys: Keys) -> Case:
    group = r.choices(list(_GROUP_WEIGHTS), weights=list(_GROUP_WEIGHTS.values()))[0]
    pair = keys.dh(group)
    g = FFDHE_GROUPS[group]
    pick = r.random()
    if pick < 0.75:
        y, how = Keys.dh_key(group, r)[1], "a peer in the group"
    elif pick < 0.9:
        y, how = r.choice(((1, "y = 1"), (g.p - 1, "y = p - 1"), (0, "y = 0"), (g.p, "y = p")))
    else:
        y = r.randrange(2, g.p - 1)
        while gmpy2.legendre(y, g.p) == 1:
            y += 1
        how = "y outside the prime-order subgroup"
    other = None
    if r.random() < 0.05:
        other = r.choice([name for name in _GROUP_WEIGHTS if name != group])
        y, how = Keys.dh_key(other, r)[1], f"a peer in {other}"
    text = f"{group}.exchange({how})"

    def exchange(p: Provider) -> Any:
        peer = dh.DHPublicKey.from_public_value(other or group, y)
        return dh_private(group, pair, p).exchange(peer)

    return Case("dh", group, text, exchange)


def gen_drbg(r: random.Random, keys: Keys) -> Case:
    pick = r.random()
    if pick < 0.9:
        n: Any = r.choice((0, 1, 16, 17, 32, 48, 1000)) if r.random() < 0.5 else r.randint(0, 5000)
    else:
        n = r.choice((-1, 1.5, "16", True))
    text = f"Drbg().random_bytes({n!r})"

    def draw(p: Provider) -> Any:
        out = Drbg(p).random_bytes(n)
        return ("random bytes", type(out).__name__, len(out))

    return Case("drbg", "drbg", text, draw)


#: Each family's generator and its share of the cases.
GENERATORS: dict[str, tuple[float, Callable[[random.Random, Keys], Case]]] = {
    "aead": (5, gen_aead),
    "more-aead": (1.5, gen_more_aead),
    "cipher": (5, gen_cipher),
    "hash": (3, gen_hash),
    "hmac": (3, gen_hmac),
    "cmac": (1.5, gen_cmac),
    "gmac": (1.5, gen_gmac),
    "rsa": (3, gen_rsa),
    "ecdsa": (2, gen_ecdsa),
    "ecdh": (1, gen_ecdh),
    "dh": (1, gen_dh),
    "drbg": (1, gen_drbg),
}


@functools.cache
def keys_for(seed: int) -> Keys:
    """The key pools of ``seed``, made once per process."""
    return Keys(seed)


def make_case(seed: int, index: int, keys: Keys, families: list[str] | None = None) -> Case:
    """Case ``index`` of the campaign of ``seed`` (the same case on every run)."""
    r = random.Random(f"case:{seed}:{index}")
    names = families or list(GENERATORS)
    family = r.choices(names, weights=[GENERATORS[f][0] for f in names])[0]
    return GENERATORS[family][1](r, keys)
