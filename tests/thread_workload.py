"""A mixed, checked, tallied workload for many threads sharing one provider."""

from __future__ import annotations

import gc
import hashlib
import hmac as std_hmac
import os
import random
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import cmac as c_cmac
from cryptography.hazmat.primitives import hashes as c_hashes
from cryptography.hazmat.primitives.asymmetric import ec as c_ec
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers import Cipher as CCipher
from cryptography.hazmat.primitives.ciphers import aead as c_aead
from cryptography.hazmat.primitives.ciphers import algorithms as c_algorithms
from cryptography.hazmat.primitives.ciphers import modes as c_modes

from cryptoffload import Provider, cmac, dh, ec, gmac, hashes, hmac, modes, rsa
from cryptoffload.aead import AESCCM, AESGCM
from cryptoffload.blocks.ffdhe import FFDHE_GROUPS
from cryptoffload.ciphers import Cipher, algorithms
from cryptoffload.drbg import Drbg

RSA_BITS = 2048
GROUP = "ffdhe2048"


class Shared:
    """What every thread shares: keys, AEAD objects, a DRBG (seeded before the threads start,
    its seed op counted then), and the references that check answers."""

    def __init__(self, provider: Provider, seed: int) -> None:
        from fuzz_cases import dh_private, keys_for  # the seeded key pools of the fuzzing

        keys = keys_for(seed)
        r = random.Random(f"shared:{seed}")
        self.provider = provider
        self.gcm_key = r.randbytes(32)
        self.gcm = AESGCM(self.gcm_key, provider=provider)
        self.ccm_key = r.randbytes(16)
        self.ccm = AESCCM(self.ccm_key, 8, provider=provider)
        self.mac_key = r.randbytes(32)
        self.rsa_raw = keys.rsa(RSA_BITS)
        self.rsa = rsa.RSAPrivateKey(self.rsa_raw, provider=provider)
        self.ec_raw = keys.ec("p256")
        self.ec = ec.EllipticCurvePrivateKey(self.ec_raw, provider=provider)
        self.ec_peer = keys.ec_scalar("p256", r).public_key()
        x, _ = keys.dh(GROUP)
        self.dh = dh_private(GROUP, keys.dh(GROUP), provider)
        peer_y = keys.dh_key(GROUP, r)[1]
        self.dh_peer = dh.DHPublicKey.from_public_value(GROUP, peer_y)
        p = FFDHE_GROUPS[GROUP].p
        self.dh_secret = pow(peer_y, x, p).to_bytes((p.bit_length() + 7) // 8, "big")
        self.ecdh_secret = self.ec_raw.exchange(c_ec.ECDH(), self.ec_peer)
        self.drbg = Drbg(provider)
        self.drbg.random_bytes(1)  # seeded now: every later draw is exactly one op


@dataclass
class Tally:
    """One thread's record: operations issued by algorithm, wrong answers, unexpected errors."""

    issued: Counter = field(default_factory=Counter)
    tasks: Counter = field(default_factory=Counter)
    slowest: float = 0.0  # seconds, the longest task
    wrong: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _size(r: random.Random) -> int:
    return (
        r.choice((0, 1, 15, 16, 17, 64, 100, 1000, 4096, 10000))
        if r.random() < 0.5
        else r.randint(0, 3000)
    )


def _check(t: Tally, what: str, ok: bool) -> None:
    if not ok:
        t.wrong.append(what)


def task_gcm_shared(s: Shared, r: random.Random, t: Tally) -> None:
    nonce, msg, aad = r.randbytes(12), r.randbytes(_size(r)), r.randbytes(r.randint(0, 32))
    sealed = s.gcm.encrypt(nonce, msg, aad)
    _check(t, "gcm shared encrypt", sealed == c_aead.AESGCM(s.gcm_key).encrypt(nonce, msg, aad))
    _check(t, "gcm shared decrypt", s.gcm.decrypt(nonce, sealed, aad) == msg)
    t.issued["aes-256-gcm"] += 2


def task_gcm_own(s: Shared, r: random.Random, t: Tally) -> None:
    key = r.randbytes(r.choice((16, 24, 32)))
    tag = r.choice((16, 12, 8))
    nonce, msg = r.randbytes(12), r.randbytes(_size(r))
    ours = AESGCM(key, tag, provider=s.provider)
    sealed = ours.encrypt(nonce, msg, None)
    ctx = CCipher(c_algorithms.AES(key), c_modes.GCM(nonce)).encryptor()
    want = ctx.update(msg) + ctx.finalize()
    _check(t, "gcm own encrypt", sealed == want + ctx.tag[:tag])
    altered = bytearray(sealed)
    altered[-1] ^= 1
    try:
        ours.decrypt(nonce, bytes(altered), None)
        _check(t, "gcm own altered tag accepted", False)
    except InvalidTag:
        pass
    t.issued[f"aes-{len(key) * 8}-gcm"] += 2


def task_ccm(s: Shared, r: random.Random, t: Tally) -> None:
    nonce, msg = r.randbytes(13), r.randbytes(_size(r))
    sealed = s.ccm.encrypt(nonce, msg, b"ccm")
    _check(t, "ccm encrypt", sealed == c_aead.AESCCM(s.ccm_key, 8).encrypt(nonce, msg, b"ccm"))
    _check(t, "ccm decrypt", s.ccm.decrypt(nonce, sealed, b"ccm") == msg)
    t.issued["aes-128-ccm"] += 2


def task_gcm_batch(s: Shared, r: random.Random, t: Tally) -> None:
    items = [(r.randbytes(12), r.randbytes(_size(r)), None) for _ in range(r.randint(1, 8))]
    sealed = s.gcm.encrypt_many(items)
    ref = c_aead.AESGCM(s.gcm_key)
    _check(t, "gcm batch", sealed == [ref.encrypt(*item) for item in items])
    bad = r.randrange(len(items))
    opened = [
        (n, c if i != bad else c[:-1] + bytes([c[-1] ^ 1]), a)
        for i, ((n, _, a), c) in enumerate(zip(items, sealed, strict=True))
    ]
    out = s.gcm.decrypt_many(opened)
    for i, (item, got) in enumerate(zip(items, out, strict=True)):
        _check(t, "gcm batch open", isinstance(got, InvalidTag) if i == bad else got == item[1])
    t.issued["aes-256-gcm"] += 2 * len(items)


def task_cipher(s: Shared, r: random.Random, t: Tally) -> None:
    mode = r.choice(("cbc", "ctr", "ecb", "ofb", "cfb"))
    key, iv = r.randbytes(r.choice((16, 32))), r.randbytes(16)
    chunks = [
        r.randbytes(r.randint(0, 5) * 16 if mode in ("cbc", "ecb") else r.randint(0, 90))
        for _ in range(r.randint(1, 4))
    ]

    def mode_of(m: Any) -> Any:
        return (
            m.ECB()
            if mode == "ecb"
            else {"cbc": m.CBC, "ctr": m.CTR, "ofb": m.OFB, "cfb": m.CFB}[mode](iv)
        )

    ctx = Cipher(algorithms.AES(key), mode_of(modes), provider=s.provider).encryptor()
    got = b"".join(ctx.update(c) for c in chunks) + ctx.finalize()
    ref = CCipher(c_algorithms.AES(key), mode_of(modes)).encryptor()
    _check(t, f"{mode} context", got == ref.update(b"".join(chunks)) + ref.finalize())
    # Each update with data is one op; ECB/CBC get whole blocks here, so nothing is held back.
    t.issued[f"aes-{len(key) * 8}-{mode}"] += sum(1 for c in chunks if c)


def task_hash(s: Shared, r: random.Random, t: Tally) -> None:
    name = r.choice(("sha1", "sha256", "sha384", "sha512"))
    algorithm = getattr(c_hashes, name.upper())()
    msg = r.randbytes(_size(r))
    pick = r.random()
    if pick < 0.4:
        _check(
            t,
            "digest",
            hashes.digest(msg, algorithm, provider=s.provider) == hashlib.new(name, msg).digest(),
        )
        t.issued[name] += 1
    elif pick < 0.7:
        h = hashes.Hash(algorithm, provider=s.provider)
        for i in range(0, len(msg), 700):
            h.update(msg[i : i + 700])
        _check(t, "hash stream", h.finalize() == hashlib.new(name, msg).digest())
        t.issued[name] += 1
    else:
        msgs = [r.randbytes(_size(r)) for _ in range(r.randint(1, 6))]
        got = hashes.digest_many(msgs, algorithm, provider=s.provider)
        _check(t, "digest_many", got == [hashlib.new(name, m).digest() for m in msgs])
        t.issued[name] += len(msgs)


def task_mac(s: Shared, r: random.Random, t: Tally) -> None:
    msg = r.randbytes(_size(r))
    pick = r.random()
    if pick < 0.4:
        key = s.mac_key if r.random() < 0.5 else r.randbytes(r.randint(0, 100))
        mac = hmac.HMAC(key, c_hashes.SHA256(), provider=s.provider)
        mac.update(msg)
        _check(t, "hmac", mac.finalize() == std_hmac.new(key, msg, "sha256").digest())
        t.issued["hmac-sha256"] += 1
    elif pick < 0.6:
        msgs = [r.randbytes(_size(r)) for _ in range(r.randint(1, 5))]
        got = hmac.digest_many(s.mac_key, msgs, c_hashes.SHA256(), provider=s.provider)
        _check(t, "hmac many", got == [std_hmac.new(s.mac_key, m, "sha256").digest() for m in msgs])
        t.issued["hmac-sha256"] += len(msgs)
    elif pick < 0.8:
        key = s.mac_key[:16]
        c = cmac.CMAC(algorithms.AES(key), provider=s.provider)
        c.update(msg)
        ref = c_cmac.CMAC(c_algorithms.AES(key))
        ref.update(msg)
        _check(t, "cmac", c.finalize() == ref.finalize())
        t.issued["cmac-aes-128"] += 1
    else:
        nonce = r.randbytes(12)
        g = gmac.GMAC(s.gcm_key, nonce, provider=s.provider)
        g.update(msg)
        ctx = CCipher(c_algorithms.AES(s.gcm_key), c_modes.GCM(nonce)).encryptor()
        ctx.authenticate_additional_data(msg)
        ctx.finalize()
        _check(t, "gmac", g.finalize() == ctx.tag)
        t.issued["gmac-aes-256"] += 1


def task_rsa(s: Shared, r: random.Random, t: Tally) -> None:
    msg = r.randbytes(r.randint(0, 200))
    pick = r.random()
    priv, pub = f"rsa-{RSA_BITS}-private", f"rsa-{RSA_BITS}-public"
    if pick < 0.5:
        sig = s.rsa.sign(msg, padding.PKCS1v15(), c_hashes.SHA256())
        _check(t, "rsa sign", sig == s.rsa_raw.sign(msg, padding.PKCS1v15(), c_hashes.SHA256()))
        s.rsa.public_key().verify(sig, msg, padding.PKCS1v15(), c_hashes.SHA256())
        t.issued[priv] += 1
        t.issued[pub] += 1
    else:
        oaep = padding.OAEP(padding.MGF1(c_hashes.SHA256()), c_hashes.SHA256(), None)
        sealed = s.rsa.public_key().encrypt(msg[:100], oaep)
        _check(t, "rsa oaep", s.rsa_raw.decrypt(sealed, oaep) == msg[:100])
        _check(t, "rsa decrypt", s.rsa.decrypt(sealed, oaep) == msg[:100])
        t.issued[priv] += 1
        t.issued[pub] += 1


def task_ec(s: Shared, r: random.Random, t: Tally) -> None:
    msg = r.randbytes(r.randint(0, 200))
    if r.random() < 0.6:
        sig = s.ec.sign(msg, c_ec.ECDSA(c_hashes.SHA256()))
        s.ec_raw.public_key().verify(sig, msg, c_ec.ECDSA(c_hashes.SHA256()))
        s.ec.public_key().verify(sig, msg, c_ec.ECDSA(c_hashes.SHA256()))
        try:
            s.ec.public_key().verify(sig, msg + b"!", c_ec.ECDSA(c_hashes.SHA256()))
            _check(t, "ecdsa accepted another message", False)
        except InvalidSignature:
            pass
        t.issued["ecdsa-p256-sign"] += 1
        t.issued["ecdsa-p256-verify"] += 2  # a refused signature is an answer: counted too
    else:
        _check(t, "ecdh", s.ec.exchange(c_ec.ECDH(), s.ec_peer) == s.ecdh_secret)
        t.issued["ecdh-p256"] += 1


def task_dh_drbg(s: Shared, r: random.Random, t: Tally) -> None:
    if r.random() < 0.3:
        _check(t, "dh", s.dh.exchange(s.dh_peer) == s.dh_secret)
        t.issued[GROUP] += 1
    elif r.random() < 0.5:
        n = r.randint(0, 100)
        _check(t, "drbg shared", len(s.drbg.random_bytes(n)) == n)
        t.issued["drbg"] += 1
    else:
        n = r.randint(0, 100)
        _check(t, "drbg own", len(Drbg(s.provider).random_bytes(n)) == n)
        t.issued["drbg"] += 2  # its seed, from the engines or the OS, then the draw


#: Each task and its weight in the mix.
TASKS: Sequence[tuple[float, Callable[[Shared, random.Random, Tally], None]]] = (
    (3, task_gcm_shared),
    (2, task_gcm_own),
    (1, task_ccm),
    (1, task_gcm_batch),
    (2, task_cipher),
    (2, task_hash),
    (2, task_mac),
    (0.5, task_rsa),
    (0.7, task_ec),
    (0.6, task_dh_drbg),
)


def run_thread(
    s: Shared, seed: int, index: int, tasks: int | None, stop: threading.Event, t: Tally
) -> None:
    """Run ``tasks`` tasks (or until ``stop``), drawn from thread ``index``'s own seeded stream."""
    r = random.Random(f"thread:{seed}:{index}")
    weights = [w for w, _ in TASKS]
    done = 0
    while (tasks is None or done < tasks) and not stop.is_set():
        task = r.choices(TASKS, weights=weights)[0][1]
        t.tasks[task.__name__] += 1
        began = time.perf_counter()
        try:
            task(s, r, t)
        except Exception as exc:  # reported with the wrong answers
            t.errors.append(f"{task.__name__}: {type(exc).__name__}: {str(exc)[:100]}")
        t.slowest = max(t.slowest, time.perf_counter() - began)
        done += 1


def forget_records(provider: Provider) -> None:
    """Empty what the test doubles and the /dev/crypto stand-in record of every op (their own
    bookkeeping, not the library's), so that memory figures show the library alone."""
    for engine in provider.engines:
        inner = getattr(engine, "engine", engine)
        seen = getattr(inner, "seen", None)
        if isinstance(seen, list):
            seen.clear()
    try:
        import cryptodev_standin
    except ImportError:
        return
    device = cryptodev_standin.installed()
    if device is not None:
        device.seen.clear()


def open_fds() -> int:
    """Descriptors open in this process now (0 where /proc is absent)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def counted_ops(provider: Provider) -> Counter:
    """Operations the provider's counters hold, by algorithm, over every engine."""
    out: Counter = Counter()
    for algs in provider.counters.snapshot().values():
        for alg, cell in algs.items():
            out[alg] += cell["ops"]
    return out


@dataclass
class Run:
    """What one multi-threaded run found."""

    threads: int
    issued: Counter
    counted: Counter
    tasks: Counter
    wrong: list[str]
    errors: list[str]
    stuck: int  # threads still running after the deadline
    seconds: float
    slowest: float  # seconds, the longest task of any thread
    fds: tuple[int, int, int]  # before, most seen while running, after
    memory: tuple[int, int]  # traced bytes before, after (KiB), threads joined and collected

    @property
    def ops(self) -> int:
        return sum(self.issued.values())

    @property
    def drift(self) -> int:
        """Operations counted and not issued or issued and not counted, over every algorithm."""
        return sum(
            abs(self.counted[a] - self.issued[a]) for a in set(self.counted) | set(self.issued)
        )


def run_threads(
    provider: Provider,
    threads: int,
    seed: int,
    tasks: int | None = None,
    seconds: float | None = None,
    deadline: float = 120.0,
    on_sample: Callable[[], None] | None = None,
    trace: bool = True,
) -> Run:
    """``threads`` threads on ``provider`` (``tasks`` each, or for ``seconds``), joined within
    ``deadline`` seconds (after ``seconds``, that long to end their task; threads left running
    count as stuck); counters read after. With ``trace``, traced memory before and after
    (tracemalloc, started here if it is not on)."""
    shared = Shared(provider, seed)
    forget_records(provider)
    base = counted_ops(provider)
    gc.collect()
    tracing = tracemalloc.is_tracing()
    if trace and not tracing:
        tracemalloc.start()
    mem_before = tracemalloc.get_traced_memory()[0] if trace else 0
    fds_before = fds_max = open_fds()
    stop = threading.Event()
    tallies = [Tally() for _ in range(threads)]
    workers = [
        threading.Thread(
            target=run_thread, args=(shared, seed, i, tasks, stop, tallies[i]), daemon=True
        )
        for i in range(threads)
    ]
    start = time.perf_counter()
    for w in workers:
        w.start()
    end_by = start + (seconds if seconds is not None else deadline)
    join_by = end_by + (deadline if seconds is not None else 0.0)  # time to end their task
    while any(w.is_alive() for w in workers) and time.perf_counter() < end_by:
        fds_max = max(fds_max, open_fds())
        forget_records(provider)
        if on_sample is not None:
            on_sample()
        time.sleep(0.05)
    stop.set()
    for w in workers:
        w.join(max(0.0, join_by - time.perf_counter()))
    took = time.perf_counter() - start
    stuck = sum(w.is_alive() for w in workers)
    fds_max = max(fds_max, open_fds())
    del workers, shared
    forget_records(provider)
    counted = counted_ops(provider) - base  # reading the counters folds what they hold pending
    gc.collect()
    mem_after = tracemalloc.get_traced_memory()[0] if trace else 0
    if trace and not tracing:
        tracemalloc.stop()
    issued: Counter = Counter()
    tasks_run: Counter = Counter()
    for t in tallies:
        issued.update(t.issued)
        tasks_run.update(t.tasks)
    counted = Counter({alg: n for alg, n in counted.items() if n})
    return Run(
        threads,
        issued,
        counted,
        tasks_run,
        [w for t in tallies for w in t.wrong],
        [e for t in tallies for e in t.errors],
        stuck,
        took,
        max(t.slowest for t in tallies),
        (fds_before, fds_max, open_fds()),
        (mem_before // 1024, mem_after // 1024),
    )
