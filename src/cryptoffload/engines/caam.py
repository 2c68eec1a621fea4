"""The CAAM / QorIQ SEC engine: ops through a user-space job ring driver, on a board or the model.

Spec strings: ``caam`` (the block of this machine: found from the device tree, or given with
``caam:base=0x...,pool=0x...:SIZE`` / ``udmabuf=N`` / ``uio=N``) and ``caam:model=PART`` (the
functional model: ``t2080``, ``t1040``, ``t2080-nosec``, ``imx7d``; ``seed=`` fixes its device
key) and ``caam:device=PART[,latency=S,throughput=B,pool=SIZE]`` (the model as a device process,
started at probe in a temporary directory and stopped when the engine closes or the interpreter
exits, reached through the board transport: see ``cryptoffload.caam.device``); each takes
``timeout=SECONDS`` (default 2), after which a job's ring is taken as stalled and reset, and
``complete=poll|irq`` (``irq``, the default where there is an interrupt: the device process, a
UIO device; ``poll`` on the in-process model and /dev/mem). What the engine claims comes from
the block's capability registers, read at probe time.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

from cryptoffload.blocks import pkcs1
from cryptoffload.blocks.curves import CURVES, by_cryptography
from cryptoffload.core.names import FFDHE_NAMES, RSA_SIZES
from cryptoffload.core.ops import Op
from cryptoffload.devicekey import DeviceKey, DeviceKeyError
from cryptoffload.dmabuffer import DmaBuffer, Lease, locate
from cryptoffload.engines import _fork, presence
from cryptoffload.engines.base import Capabilities
from cryptoffload.errors import BadEngineSpec, EngineError, Unavailable

#: Where a QorIQ or i.MX device tree says a SEC/CAAM block is (compatible "fsl,sec-v4.0").
DEVICE_TREE = Path(presence.CAAM_DEVICE_TREE)
_MODES = {"ecb": "ECB", "cbc": "CBC", "ctr": "CTR", "cfb": "CFB", "ofb": "OFB"}
_CAAM_HASHES = ("sha1", "sha224", "sha256", "sha384", "sha512")
_FFDHE_BITS = {name: int(name[5:]) for name in FFDHE_NAMES}
#: The families ``start`` does not put on the ring alone (``_prepare`` does not take them):
#: PKHA, RNG, a cipher into a caller's buffer. The asyncio layer runs them whole.
_WHOLE = frozenset({"cipher", "mac", "rsa", "ecdsa", "ecdh", "dh", "rng"})
#: Seconds a job may take before the ring is taken as stalled and reset (spec option timeout=).
DEFAULT_TIMEOUT = 2.0


class CaamEngine:
    """Operations on the CAAM job ring; see the module docstring for the spec forms."""

    def __init__(
        self,
        name: str,
        open_transport: Callable[[], Any],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        complete: str | None = None,
    ) -> None:
        self.name = name
        self._open_transport = open_transport
        self._timeout = timeout
        self._complete = complete  # None: irq where the transport has an interrupt
        self._transport: Any = None
        self._driver: Any = None
        self._claimed: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        self._black: dict[DeviceKey, Any] = {}  # device keys opened into black keys, by key
        self._leases: dict[int, Lease] = {}  # DMA memory lent to callers (DmaBuffers), by address
        #: Why ops are declined once the driver is gone (closed, or this is a forked child).
        self._gone = "the engine was closed or never probed"
        _fork.watch(self)

    def __repr__(self) -> str:
        return f"<CaamEngine {self.name}>"

    # -- discovery ---------------------------------------------------------------------------

    def probe(self) -> Capabilities:
        """Open the block, read what it has, bring RNG4 up; never raises. A second probe
        releases what the first opened (a device process, a ring) before opening again."""
        if self._driver is not None or self._transport is not None:
            self.close()
        try:
            transport = self._open_transport()
        except (OSError, EngineError, ValueError) as exc:
            return Capabilities(False, _reason(exc))
        except RuntimeError as exc:
            from cryptoffload.caam.jr.boards import BoardError

            if not isinstance(exc, BoardError):
                raise
            return Capabilities(False, _reason(exc))
        # The driver only once there is a block: a machine without one (most) need not load it.
        from cryptoffload.caam.jr.driver import Driver
        from cryptoffload.caam.jr.jobs import CaamError, CaamUnavailable

        irq = getattr(transport, "irq", None)
        complete = self._complete or ("irq" if irq is not None else "poll")
        if complete == "irq" and irq is None:
            transport.close()
            return Capabilities(False, f"complete=irq: {transport.name} has no interrupt")
        try:
            driver = Driver(transport, timeout=self._timeout, complete=complete, irq=irq)
        except CaamUnavailable as exc:
            transport.close()
            return Capabilities(False, _reason(exc))
        except (CaamError, OSError, RuntimeError) as exc:
            transport.close()
            return Capabilities(False, f"the block did not come up: {exc}")
        rng = True
        try:
            driver.ensure_rng()
        except (CaamError, OSError) as exc:
            rng = False
            rng_reason = str(exc)
        self._transport, self._driver = transport, driver
        claimed = _claims(driver, rng)
        self._claimed = frozenset(claimed)
        caps = driver.caps
        detail = {
            "transport": transport.name,
            "era": caps.era,
            "byte order": caps.byteorder,
            "pointers": f"{driver.pointer_size * 8}-bit",
            "ring depth": driver.depth,
            "completion": complete,
            "CHAs": {k: v for k, v in caps.counts.items() if v},
            "GCM": caps.gcm,
            "PKHA bits": driver.pkha_bits if caps.counts.get("PK") else 0,
            "RNG": "instantiated" if rng else f"not usable: {rng_reason}",
        }
        if not claimed:
            return Capabilities(False, "the block has no CHA this engine uses", detail=detail)
        return Capabilities(True, "", self._claimed, detail=detail)

    @property
    def device(self) -> Any:
        """The device process behind a ``caam:device=`` engine (its ``pid``, ``figures()``),
        else None."""
        return getattr(self._transport, "device", None)

    @property
    def figures(self) -> dict[str, Any]:
        """The driver's counts: jobs, descriptor words, bytes each way, errors by status...;
        on a device process also ``device``, the device's own (jobs, bytes its DMA read, the
        modelled, compute and busy seconds, interrupts raised)."""
        driver, transport = self._driver, self._transport
        if driver is None:
            return {}
        out = dict(driver.figures)
        device = getattr(transport, "device", None)
        if device is not None and device.alive():
            out["device"] = device.figures()
        return out

    def wrap_key(self, key: bytes, modifier: bytes) -> DeviceKey:
        """``key`` (AES, 16/24/32 bytes) sealed to this device under ``modifier`` (8 or 16
        bytes): a DeviceKey that AESGCM/AESCCM take and only this engine can use. The key
        bytes go to the block once; keep the returned key's ``blob`` and ``modifier``."""
        from cryptoffload.caam.recipes import blob

        if len(key) not in (16, 24, 32):
            raise ValueError(f"AES key must be 16, 24 or 32 bytes, got {len(key)}")
        driver = self._driver
        if driver is None:
            raise DeviceKeyError(f"{self.name} is not available: no device to bind a key to")
        sealed = _mapped(lambda: blob.wrap_key(driver, bytes(key), bytes(modifier)))
        return DeviceKey(sealed, modifier, len(key) * 8, self.name)

    def _key(self, key: Any) -> Any:
        """Key bytes as they are; a DeviceKey of this engine opened (once) into a black key."""
        if not isinstance(key, DeviceKey):
            return key
        if key.engine != self.name:
            raise Unavailable("unsupported", f"a key bound to {key.engine}")
        with self._lock:
            black = self._black.get(key)
        if black is None:
            from cryptoffload.caam.recipes import blob
            from cryptoffload.caam.recipes.base import IcvError

            try:
                black = blob.unwrap_key(self._driver, key.blob, key.modifier)
            except IcvError:
                raise DeviceKeyError(
                    f"this device key's blob does not open on {self.name}: it was made on "
                    "another device or with another modifier, or it was changed"
                ) from None
            with self._lock:
                black = self._black.setdefault(key, black)
        return black

    def buffer(self, n: int) -> DmaBuffer:
        """``n`` bytes of the job ring's DMA memory, handed to the caller: a DmaBuffer that
        ``*_into`` calls on this engine use in place (no copy in or out). Not zeroed when lent
        nor wiped when given back: its contents are the caller's. Unavailable when the engine
        is closed or the pool is full."""
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise ValueError(f"a DmaBuffer holds 1 byte or more, got {n!r}")
        driver = self._driver
        if driver is None:
            raise Unavailable("no-device", self._gone)
        phys, view = _mapped(lambda: driver.lend(n))
        lease = Lease(self, phys, n)
        with self._lock:
            if self._driver is not driver:  # closed meanwhile: the region went with it
                raise Unavailable("no-device", self._gone)
            self._leases[phys] = lease
        return DmaBuffer._make(view, lease, 0, False)

    def _give_back(self, lease: Lease) -> None:
        """A DmaBuffer closed: its memory back to the pool, not wiped (the caller's)."""
        with self._lock:
            if self._leases.pop(lease.phys, None) is lease and self._driver is not None:
                self._driver.free(lease.phys)

    def close(self) -> None:
        """Release the ring, its DMA memory and the block. DmaBuffers still open become
        ordinary buffers (their memory stays mapped while they live)."""
        with self._lock:
            driver, transport = self._driver, self._transport
            self._driver = self._transport = None
            black, self._black = self._black, {}
            leases, self._leases = self._leases, {}
        for lease in leases.values():
            lease.detach()
        if driver is not None:
            from cryptoffload.caam.recipes import blob

            for key in black.values():
                with contextlib.suppress(Exception):
                    blob.release_key(driver, key)
            driver.close()
        if transport is not None:
            transport.close()

    def _after_fork_in_child(self) -> None:
        """In a forked child the ring, its registers and its DMA memory stay the parent's: the
        child forgets them without a word to the block (closing would reset the parent's ring)
        and declines every op from then on; software answers in the child."""
        self._lock = threading.Lock()
        if self._driver is not None:
            self._gone = (
                f"this process is a fork of the one that holds the {self.name} job ring; a "
                "child never shares the ring with its parent"
            )
        self._driver = self._transport = None
        self._black = {}
        leases, self._leases = self._leases, {}
        for lease in leases.values():
            lease.detach()

    # -- operations --------------------------------------------------------------------------

    def run(self, op: Op) -> Any:
        """Perform ``op`` on the job ring, or decline what the block cannot express."""
        driver = self._ready(op)
        return _mapped(lambda: _RUN[op.family](self, driver, op))

    def run_batch(self, ops: Sequence[Op]) -> list[Any]:
        """Put the batch on the ring together (AES and hashes); each item's result or error."""
        from cryptoffload.caam.recipes import base

        driver = self._ready(ops[0])
        prepared: list[Any] = []
        for op in ops:
            try:
                prepared.append(_mapped(lambda op=op: _prepare(self, driver, op)))
            except Exception as exc:
                prepared.append(exc)
        jobs = [p for p in prepared if not isinstance(p, Exception)]
        done = iter(_mapped(lambda: base.execute_many(driver, [j for j, _ in jobs])))
        out: list[Any] = []
        for item in prepared:
            if isinstance(item, Exception):
                out.append(item)
                continue
            result = next(done)
            out.append(result if isinstance(result, Exception) else item[1](result))
        return [_mapped_result(r) for r in out]

    def start(self, op: Op) -> Any:
        """Put ``op`` on the ring and return at once: a Pending settled when the driver reaps
        the job (``service`` from the completion fd, or a caller's wait). The families batches
        take (AES, hashes, HMAC); None for the others (the asyncio layer runs those whole)."""
        from cryptoffload.engines.pending import Pending

        driver = self._ready(op)
        try:
            prepared, finisher = _mapped(lambda: _prepare(self, driver, op))
        except Unavailable as exc:
            if exc.reason == "unsupported" and op.family in _WHOLE:
                return None
            raise
        b = prepared.buffers
        # The job owns its regions from here: the driver frees them when it reaps the job
        # (wiped), never before, whatever becomes of whoever awaits it.
        job = _mapped(lambda: driver.submit(prepared.words, owned=b.owned, collect=b.collect))
        pending = Pending(wait=job.wait)

        def settle(job: Any) -> None:
            try:
                result = finisher(prepared.finish(job.wait(), job.outputs))
            except Exception as exc:
                pending.set_exception(_mapped_result(exc))
            else:
                pending.set_result(result)

        job.add_done_callback(settle)
        if self.completion_fd() is None:
            driver.poll()  # the in-process model has run it already: reap it now
        return pending

    def completion_fd(self) -> int | None:
        """The driver's completion fd (readable when jobs completed), or None: the driver has
        none (it is polled), or the engine is closed."""
        driver = self._driver
        fd = getattr(driver, "completion_fd", None) if driver is not None else None
        if callable(fd):
            fd = fd()
        return fd if isinstance(fd, int) and not isinstance(fd, bool) else None

    def service(self) -> None:
        """Called when the completion fd is readable: the driver acknowledges and reaps, and
        the done callbacks of the jobs it reaped run (settling their Pendings)."""
        driver = self._driver
        if driver is None:
            return
        service = getattr(driver, "service", None)
        if service is None:
            driver.poll()
            return
        service()
        run_callbacks = getattr(driver, "_run_callbacks", None)
        if run_callbacks is not None:
            run_callbacks()

    def open_stream(self, op: Op) -> Any:
        """A hash or HMAC whose running state (the class-2 context) the engine keeps."""
        from cryptoffload.caam.recipes import hash as caam_hash

        driver = self._ready(op)
        if op.family == "hash":
            return _mapped(lambda: caam_hash.open_stream(driver, op.alg))
        if op.alg.startswith("hmac-"):
            return _mapped(lambda: caam_hash.open_stream(driver, op.alg[5:], bytes(op.key)))
        raise Unavailable("streaming", op.alg)

    def open_aead_stream(self, op: Op) -> Any:
        """An AES-GCM whose running state (the class-1 context) the engine keeps between jobs."""
        from cryptoffload.caam.recipes import gcm_stream

        driver = self._ready(op)
        if not op.alg.endswith("-gcm"):
            raise Unavailable("streaming", op.alg)
        key = self._key(op.key)
        encrypt = op.kind == "encrypt"
        return _MappedStream(
            _mapped(lambda: gcm_stream.open_stream(driver, key, bytes(op.iv), encrypt=encrypt))
        )

    def session(self, op: Op) -> Any:
        """AES-GCM and AES-CCM ops of one key on the job ring, handed over without the Op (the
        engine route, see :mod:`cryptoffload.engines.base`): each call does what :meth:`run`
        does for that op, the same recipe and the same outcomes. None for anything else."""
        alg = op.alg
        if op.family != "aead" or alg not in self._claimed or alg[-4:] not in ("-gcm", "-ccm"):
            return None
        return _AeadSession(self, alg, op.key, op.tag_length)

    def _ready(self, op: Op) -> Any:
        return self._ready_for(op.alg)

    def _ready_for(self, alg: str) -> Any:
        driver = self._driver
        if driver is None:
            raise Unavailable("no-device", self._gone)
        if driver._broken is not None:  # the block stopped answering: declined from now on
            device = self.device
            if device is not None and not device.alive():
                raise Unavailable(
                    "no-device",
                    f"the device process exited (status {device.proc.returncode}): "
                    f"{driver._broken}",
                )
            raise Unavailable("no-device", driver._broken)
        if alg not in self._claimed:
            raise Unavailable("unsupported", alg)
        return driver


# -- what the block can do ------------------------------------------------------------------


def _claims(driver: Any, rng: bool) -> set[str]:
    from cryptoffload.caam.recipes.pk import MAX_ECC_BYTES

    counts = driver.caps.counts
    rng = rng and bool(counts.get("RNG"))
    names: set[str] = set()
    if counts.get("AES"):
        for bits in (128, 192, 256):
            names |= {f"aes-{bits}-{mode}" for mode in _MODES}
            names.add(f"aes-{bits}-ccm")
            if driver.caps.gcm:
                names |= {f"aes-{bits}-gcm", f"gmac-aes-{bits}"}
    if counts.get("MD"):
        lp256 = driver.caps.versions.get("MD") == 0  # MD_LP256: no SHA-384/512
        hashes = [h for h in _CAAM_HASHES if not (lp256 and h in ("sha384", "sha512"))]
        names |= set(hashes) | {f"hmac-{h}" for h in hashes}
    if counts.get("PK"):
        bits = driver.pkha_bits
        for size in RSA_SIZES:
            if size <= bits:
                names |= {f"rsa-{size}-private", f"rsa-{size}-public"}
        for curve, c in CURVES.items():
            if c.size <= MAX_ECC_BYTES and c.size * 8 <= bits:
                names |= {f"ecdsa-{curve}-verify", f"ecdh-{curve}"}
                if rng:  # the PKHA draws the signature's nonce from RNG4
                    names.add(f"ecdsa-{curve}-sign")
        names |= {g for g in FFDHE_NAMES if _FFDHE_BITS[g] <= bits}
    if rng:
        names.add("drbg")
    return names & set(_all_names())


def _all_names() -> list[str]:
    from cryptoffload.core.names import all_algorithms

    return all_algorithms()


# -- one op -----------------------------------------------------------------------------------


def _cipher(engine: CaamEngine, driver: Any, op: Op) -> Any:
    from cryptoffload.caam.recipes import cipher

    mode = _MODES[op.alg.rsplit("-", 1)[1]]
    data, out = op.data, op.out
    if data.__class__ is not bytes or out is not None:
        src = locate(data, engine)
        dst = None if out is None else locate(out, engine)
        if (src is not None or dst is not None) and not _overlap(src, dst):
            return _cipher_direct(engine, driver, op, mode, src, dst)
    result, _ = cipher.cipher(
        driver, op.key, mode, op.iv, data, encrypt=op.kind == "encrypt", into=out
    )
    return result


def _cipher_direct(engine: CaamEngine, driver: Any, op: Op, mode: str, src: Any, dst: Any) -> Any:
    """A cipher op with a DmaBuffer of this engine as input and/or output: the jobs point at
    it (in 64 KiB pieces); the other side, if an ordinary buffer, is copied."""
    from cryptoffload.caam.recipes import direct

    data = memoryview(op.data).cast("B")
    n = len(data)
    target = op.out if op.out is not None else bytearray(n)
    out = memoryview(target).cast("B")[:n]
    with _in_flight(driver, src, dst):
        direct.cipher_direct(
            driver, op.key, mode, op.iv, data, None if src is None else src[1],
            out, None if dst is None else dst[1], encrypt=op.kind == "encrypt",
        )  # fmt: skip
    return n if op.out is not None else bytes(target)


def _overlap(src: Any, dst: Any) -> bool:
    """Input and output in the same memory, overlapping but not starting at the same byte: the
    pieces in flight would read what another wrote (OpenSSL takes exact in-place only, too);
    such an op goes through bounce regions, which is always right."""
    if src is None or dst is None or src[1] == dst[1]:
        return False
    return src[1] < dst[1] + dst[2] and dst[1] < src[1] + src[2]


class _in_flight:
    """Around a job on callers' DMA buffers: if the ring broke meanwhile (it would not reset:
    the block may still write them), the buffers stay busy for good (never reused, never given
    back to the pool)."""

    __slots__ = ("_driver", "_found")

    def __init__(self, driver: Any, *found: Any) -> None:
        self._driver = driver
        self._found = found

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        if getattr(self._driver, "broken", None) is not None:
            for item in self._found:
                if item is not None:
                    item[0].pin()


def _aead(engine: CaamEngine, driver: Any, op: Op) -> bytes:
    from cryptoffload.caam.recipes import aead

    encrypt = op.kind == "encrypt"
    if op.alg[-3] == "g":  # -gcm
        fn = aead.gcm_encrypt if encrypt else aead.gcm_decrypt
    else:
        fn = aead.ccm_encrypt if encrypt else aead.ccm_decrypt
    key = engine._key(op.key)
    into = getattr(op, "into", None)
    data = op.data
    if data.__class__ is not bytes or into is not None:
        from cryptoffload.caam.recipes.base import Region

        src = locate(data, engine)
        dst = None if into is None else locate(into, engine)
        if (src is not None or dst is not None) and not _overlap(src, dst):
            pieces = data if src is None else [Region(src[1], src[2])]
            regions = None if dst is None else [Region(dst[1], dst[2])]
            with _in_flight(driver, src, dst):
                result = fn(driver, key, bytes(op.iv), pieces, bytes(op.aad or b""),
                            tag_length=op.tag_length, into=regions)  # fmt: skip
            driver.count_direct((0 if src is None else src[2]) + (0 if dst is None else dst[2]))
            return result
    return fn(driver, key, bytes(op.iv), data, bytes(op.aad or b""), tag_length=op.tag_length)


class _AeadSession:
    """One key's AES-GCM or AES-CCM ops on the job ring (``CaamEngine.session``): the recipe
    :func:`_aead` runs for an op of bytes, with the key opened per call as it is there."""

    __slots__ = ("_alg", "_decrypt", "_encrypt", "_engine", "_key", "_tag_length")

    def __init__(self, engine: CaamEngine, alg: str, key: Any, tag_length: int) -> None:
        from cryptoffload.caam.recipes import aead

        self._engine, self._alg, self._key, self._tag_length = engine, alg, key, tag_length
        if alg.endswith("-gcm"):
            self._encrypt, self._decrypt = aead.gcm_encrypt, aead.gcm_decrypt
        else:
            self._encrypt, self._decrypt = aead.ccm_encrypt, aead.ccm_decrypt

    def _run(self, fn: Any, nonce: bytes, data: bytes, aad: bytes | None) -> bytes:
        engine = self._engine
        driver = engine._ready_for(self._alg)
        return _mapped(
            lambda: fn(
                driver, engine._key(self._key), nonce, data, aad or b"", tag_length=self._tag_length
            )
        )

    def encrypt(self, nonce: bytes, data: bytes, aad: bytes | None) -> bytes:
        return self._run(self._encrypt, nonce, data, aad)

    def decrypt(self, nonce: bytes, data: bytes, aad: bytes | None) -> bytes:
        return self._run(self._decrypt, nonce, data, aad)


def _hash(engine: CaamEngine, driver: Any, op: Op) -> bytes:
    from cryptoffload.caam.recipes import hash as caam_hash

    data = op.data
    if data.__class__ is not bytes:
        src = locate(data, engine)
        if src is not None:  # a DmaBuffer of this engine: the job reads it in place
            with _in_flight(driver, src):
                out = caam_hash.digest_at(driver, op.alg, src[1], src[2])
            driver.count_direct(src[2])
            return out
    return caam_hash.digest(driver, op.alg, data)


def _mac(engine: CaamEngine, driver: Any, op: Op) -> bytes:
    from cryptoffload.caam.recipes import aead
    from cryptoffload.caam.recipes import hash as caam_hash

    if op.alg.startswith("hmac-"):
        return caam_hash.digest(driver, op.alg[5:], op.data, bytes(op.key))
    # GMAC: GCM over associated data alone; the tag is the whole output.
    return aead.gcm_encrypt(
        driver, op.key, bytes(op.iv), b"", bytes(op.data), tag_length=op.tag_length
    )


def _rsa(engine: CaamEngine, driver: Any, op: Op) -> Any:
    from cryptoffload.caam.recipes import pk

    key, bits = op.key, op.key.key_size
    if op.alg.endswith("-private"):
        numbers = key.private_numbers()

        def private(m: int) -> int:
            return pk.rsa_private_crt(
                driver, numbers.p, numbers.q, numbers.dmp1, numbers.dmq1, numbers.iqmp, m
            )

        if op.kind == "raw":
            return private(op.value)
        if op.kind == "sign":
            return pkcs1.sign_with_raw(private, bits, op.digest, op.padding, op.hash_alg)
        if isinstance(op.padding, padding.PKCS1v15):
            # Only OpenSSL's implicit rejection answers malformed v1.5 ciphertexts safely.
            raise Unavailable("unsupported", "PKCS#1 v1.5 decryption")
        n = numbers.public_numbers.n
        return pkcs1.decrypt_with_raw(private, bits, op.data, op.padding, modulus=n)
    pub = key.public_numbers()

    def public(m: int) -> int:
        return pk.rsa_public(driver, pub.n, pub.e, m)

    if op.kind == "raw":
        return public(op.value)
    if op.kind == "verify":
        return pkcs1.verify_with_raw(
            public, bits, op.signature, op.digest, op.padding, op.hash_alg, modulus=pub.n
        )
    return pkcs1.encrypt_with_raw(public, bits, op.data, op.padding)


def _ecdsa(engine: CaamEngine, driver: Any, op: Op) -> Any:
    from cryptoffload.caam.recipes import pk

    curve = by_cryptography(op.key.curve)
    if op.kind == "sign":
        if op.deterministic:
            raise Unavailable("unsupported", "RFC 6979 nonces (the PKHA draws its own)")
        r, s = pk.ecdsa_sign(driver, curve, op.key.private_numbers().private_value, op.digest)
        return encode_dss_signature(r, s)
    try:
        r, s = decode_dss_signature(bytes(op.signature))
    except ValueError:
        raise InvalidSignature from None
    numbers = op.key.public_numbers()
    if not (0 < r < curve.n and 0 < s < curve.n):
        raise InvalidSignature
    if not pk.ecdsa_verify(driver, curve, (numbers.x, numbers.y), op.digest, (r, s)):
        raise InvalidSignature
    return None


def _ecdh(engine: CaamEngine, driver: Any, op: Op) -> bytes:
    from cryptoffload.caam.recipes import pk

    curve = by_cryptography(op.key.curve)
    peer = op.peer.public_numbers()
    private = op.key.private_numbers().private_value
    return pk.ecdh(driver, curve, private, (peer.x, peer.y))


def _dh(engine: CaamEngine, driver: Any, op: Op) -> bytes:
    from cryptoffload.caam.recipes import pk

    return pk.ffdh(driver, op.key.params.p, op.key.x, op.peer.y)


def _rng(engine: CaamEngine, driver: Any, op: Op) -> bytes:
    from cryptoffload.caam.recipes import rng

    return rng.random_bytes(driver, op.length)


_RUN: dict[str, Callable[[CaamEngine, Any, Op], Any]] = {
    "cipher": _cipher,
    "aead": _aead,
    "hash": _hash,
    "mac": _mac,
    "rsa": _rsa,
    "ecdsa": _ecdsa,
    "ecdh": _ecdh,
    "dh": _dh,
    "rng": _rng,
}


def _prepare(engine: CaamEngine, driver: Any, op: Op) -> tuple[Any, Callable[[Any], Any]]:
    """(prepared job, what turns its result into the op's) for the families batches take."""
    from cryptoffload.caam.recipes import aead, cipher
    from cryptoffload.caam.recipes import hash as caam_hash

    if op.family == "cipher" and op.out is None:
        mode = _MODES[op.alg.rsplit("-", 1)[1]]
        job = cipher.prepare_cipher(
            driver, op.key, mode, op.iv, op.data, encrypt=op.kind == "encrypt"
        )
        return job, lambda result: result[0]
    if op.family == "aead":
        prepare = aead.prepare_gcm if op.alg[-3] == "g" else aead.prepare_ccm
        job = prepare(
            driver,
            engine._key(op.key),
            bytes(op.iv),
            op.data,
            bytes(op.aad or b""),
            tag_length=op.tag_length,
            encrypt=op.kind == "encrypt",
        )
        return job, lambda result: result
    if op.family == "hash":
        return caam_hash.prepare_digest(driver, op.alg, op.data), lambda result: result
    if op.family == "mac" and op.alg.startswith("hmac-"):
        job = caam_hash.prepare_digest(driver, op.alg[5:], op.data, bytes(op.key))
        return job, lambda result: result
    raise Unavailable("unsupported", f"{op.family} ops are not batched; run one by one")


# -- errors at the edge -------------------------------------------------------------------------


def _mapped(call: Callable[[], Any]) -> Any:
    """``call()``, with the driver's errors turned into the engine protocol's outcomes."""
    from cryptoffload.caam.jr.jobs import CaamUnavailable, DeviceLost, RingFull
    from cryptoffload.caam.recipes.base import IcvError

    try:
        return call()
    except IcvError:
        raise InvalidTag from None
    except DeviceLost as exc:  # lost during this op: a fault (later ops are declined)
        raise EngineError(str(exc)) from None
    except RingFull as exc:
        raise Unavailable("busy", str(exc)) from None
    except CaamUnavailable as exc:
        raise Unavailable("no-device", str(exc)) from None
    except MemoryError as exc:  # the DMA pool is full: another op may fit later
        raise Unavailable("busy", f"DMA memory: {exc}") from None


class _MappedStream:
    """A recipe's stream with each call's driver errors mapped as :func:`_mapped` maps them
    (a failed tag: InvalidTag)."""

    __slots__ = ("_stream",)

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __repr__(self) -> str:
        return f"<mapped {self._stream!r}>"

    def update_aad(self, data: bytes) -> None:
        _mapped(lambda: self._stream.update_aad(data))

    def update(self, data: bytes) -> bytes:
        return _mapped(lambda: self._stream.update(data))

    def finalize(self, tag: bytes | None = None) -> bytes:
        return _mapped(lambda: self._stream.finalize(tag))

    def close(self) -> None:
        self._stream.close()


def _mapped_result(result: Any) -> Any:
    """A batch item's outcome in the engine protocol's terms."""
    if not isinstance(result, Exception):
        return result
    try:
        _mapped(lambda: _raise(result))
    except Exception as exc:
        return exc
    return result


def _raise(exc: Exception) -> None:
    raise exc


# -- spec strings ----------------------------------------------------------------------------------


def from_spec(arg: str) -> CaamEngine:
    """``caam`` / ``caam:model=PART[,seed=HEX]`` /
    ``caam:base=0x..|uio=N,pool=0x..:SIZE|udmabuf=N[,svr=0x..]``;
    each form also takes ``timeout=SECONDS`` (how long a job may take before the ring is taken
    as stalled and reset; the engine's name leaves it out).

    A malformed spec (an option not taken, a value not of its option's kind) is a
    :class:`BadEngineSpec` naming the option and the value, raised here, before any probe."""
    options = _options(arg)
    timeout = _timeout(options.pop("timeout")) if "timeout" in options else DEFAULT_TIMEOUT
    complete = _complete(options.pop("complete")) if "complete" in options else None
    if "device" in options:
        return _device_engine(options, timeout, complete)
    if "model" in options:
        if complete == "irq":
            raise BadEngineSpec("caam:model=PART has no interrupt: complete=poll only")
        part = options.pop("model")
        seed = _seed(options.pop("seed")) if "seed" in options else None
        _no_more(options, "caam:model=PART")
        from cryptoffload.caam.model.parts import PARTS

        if part not in PARTS:
            raise BadEngineSpec(f"caam: unknown model part {part!r}; parts: {', '.join(PARTS)}")

        def open_model() -> Any:
            from cryptoffload.caam.jr.transport import ModelTransport

            return ModelTransport.for_part(part, seed=seed)

        name = f"caam:model={part}" + (f",seed={seed.hex()}" if seed is not None else "")
        return CaamEngine(name, open_model, timeout=timeout, complete=complete)
    name = "caam" if not options else "caam:" + ",".join(f"{k}={v}" for k, v in options.items())
    kwargs = _board_options(dict(options))
    return CaamEngine(name, lambda: _open_board(dict(kwargs)), timeout=timeout, complete=complete)


def _complete(text: str) -> str:
    if text not in ("poll", "irq"):
        raise BadEngineSpec(f"caam option complete is poll or irq, got {text!r}")
    return text


def _positive(key: str, text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0) or (key == "throughput" and value == 0):
        raise BadEngineSpec(f"caam option {key} is {what}, got {text!r}")
    return value


def _device_engine(options: dict[str, str], timeout: float, complete: str | None) -> CaamEngine:
    """``caam:device=PART[,latency=S,throughput=B,pool=SIZE]``: the model as a device process."""
    from cryptoffload.caam.device.layout import LAYOUTS, pool_room

    name = "caam:" + ",".join(f"{k}={v}" for k, v in options.items())
    part = options.pop("device")
    if part not in LAYOUTS:
        raise BadEngineSpec(f"caam: unknown device part {part!r}; parts: {', '.join(LAYOUTS)}")
    kwargs: dict[str, Any] = {}
    if "latency" in options:
        kwargs["latency"] = _positive(
            "latency", options.pop("latency"), "seconds per job, 0 or more (e.g. 3.5e-6)"
        )
    if "throughput" in options:
        kwargs["throughput"] = _positive(
            "throughput", options.pop("throughput"), "bytes per second above 0 (e.g. 112e6)"
        )
    if "pool" in options:
        text = options.pop("pool")
        try:
            size = _size(text)
        except ValueError:
            size = -1
        if size <= 0 or size % 0x10000:
            raise BadEngineSpec(
                f"caam option pool is a size in 64 KiB steps (e.g. 32m), got {text!r}"
            )
        room, end = pool_room(part)
        if size > room:  # the device could not map it, or would map it over its registers
            raise BadEngineSpec(
                f"caam option pool={text} ({size} bytes) is more than the {part} device's memory "
                f"map holds: its pool at {LAYOUTS[part].pool:#x} must end by {end}; give pool= "
                "at most " + (f"{room >> 20}m" if room % (1 << 20) == 0 else f"{room >> 10}k")
            )
        kwargs["pool"] = size
    _no_more(options, "caam:device=PART[,latency=S,throughput=B,pool=SIZE]")

    def open_device() -> Any:
        from cryptoffload.caam.device.process import DeviceProcess

        device = DeviceProcess.start(part, **kwargs)
        try:
            transport = device.transport()
        except BaseException:
            device.stop()
            raise
        transport.owns_device = True
        return transport

    return CaamEngine(name, open_device, timeout=timeout, complete=complete)


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise BadEngineSpec(f"caam option timeout is seconds above 0 (e.g. 0.5), got {text!r}")
    return value


def _seed(text: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise BadEngineSpec(
            f"caam option seed is bytes in hex (e.g. seed=00ff), got {text!r}"
        ) from None


def _options(arg: str) -> dict[str, str]:
    options: dict[str, str] = {}
    for item in filter(None, arg.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not value:
            raise BadEngineSpec(f"caam options are KEY=VALUE, got {item!r}")
        if key in options:
            raise BadEngineSpec(f"caam option {key!r} given twice")
        options[key] = value
    return options


def _no_more(options: dict[str, str], form: str) -> None:
    if options:
        raise BadEngineSpec(f"{form} takes no option {', '.join(sorted(options))}")


def _number(key: str, text: str, what: str = "a number (e.g. 0x1000 or 4096)") -> int:
    """The value of option ``key``: a whole number, 0 or above (``0x`` for hex)."""
    try:
        value = int(text, 0)
    except ValueError:
        value = -1
    if value < 0:
        raise BadEngineSpec(f"caam option {key} is {what}, got {text!r}")
    return value


def _board_options(options: dict[str, str]) -> dict[str, Any]:
    """The keyword arguments of :func:`boards.open_board` from the spec's options, each checked
    (a BadEngineSpec naming the option and the value); the device tree is read at open."""
    base = options.pop("base", None)
    uio = options.pop("uio", None)
    pool = options.pop("pool", None)
    udmabuf = options.pop("udmabuf", None)
    svr = options.pop("svr", None)
    _no_more(options, "caam:base=..,pool=..|udmabuf=N[,svr=0x..]")
    kwargs: dict[str, Any] = {}
    if base is not None:
        kwargs["base"] = _number("base", base, "a physical address (e.g. 0xffe300000)")
    if uio is not None:
        kwargs["uio"] = _number("uio", uio, "a uio device number (e.g. 0)")
    if pool is not None:
        phys, sep, size = pool.partition(":")
        if not sep:
            raise BadEngineSpec(
                f"caam option pool is PHYS:SIZE (e.g. 0x90000000:16m), got {pool!r}"
            )
        start = _number("pool", phys, "PHYS:SIZE (e.g. 0x90000000:16m), a physical address first")
        kwargs["pool"] = (start, _pool_size(pool, size))
    if udmabuf is not None:
        kwargs["udmabuf"] = _number("udmabuf", udmabuf, "a u-dma-buf device number (e.g. 0)")
    if svr is not None:  # where no SoC driver publishes it in /sys/devices/soc0/soc_id
        kwargs["svr"] = _number("svr", svr, "a system version register value (e.g. 0x85300010)")
    return kwargs


def _pool_size(pool: str, text: str) -> int:
    try:
        size = _size(text)
    except ValueError:
        size = -1
    if size <= 0:
        raise BadEngineSpec(
            f"caam option pool is PHYS:SIZE with a size above 0 (e.g. 0x90000000:16m), got {pool!r}"
        )
    return size


def _reason(exc: BaseException) -> str:
    """An error as the reason the engine is unavailable: without the ``caam: `` it is raised
    with, since whatever lists the reason names the engine beside it."""
    return str(exc).removeprefix("caam: ")


def _open_board(kwargs: dict[str, Any]) -> Any:
    """The transport of this machine's block: from the options, else from the device tree;
    with a UIO device, its interrupt as ``transport.irq``."""
    if "base" not in kwargs and "uio" not in kwargs:
        kwargs["base"] = int(_device_tree_base(), 0)
    if "pool" not in kwargs and "udmabuf" not in kwargs:
        raise EngineError(
            "caam: no DMA memory: give pool=PHYS:SIZE (a range reserved with mem=) or "
            "udmabuf=N (a u-dma-buf device)"
        )
    from cryptoffload.caam.jr import boards
    from cryptoffload.caam.jr.irq import Irq

    transport = boards.open_board(**kwargs)
    if "uio" in kwargs:
        try:
            transport.irq = Irq.uio(f"/dev/uio{kwargs['uio']}")
        except OSError:
            transport.irq = None  # no interrupt to wait on: the driver polls
    return transport


def _device_tree_base() -> str:
    """The physical base of the SEC/CAAM block the device tree describes."""
    nodes = sorted(DEVICE_TREE.glob("**/compatible")) if DEVICE_TREE.exists() else []
    for node in nodes:
        with contextlib.suppress(OSError):
            if b"fsl,sec-v4.0\x00" in node.read_bytes() + b"\x00":
                return hex(_physical(node.parent))
    raise EngineError(f"caam: {presence.caam_no_block(DEVICE_TREE)}")


def _physical(node: Path) -> int:
    """The CPU physical address of ``node``'s first ``reg`` entry: the bus address translated
    through each parent bus's ``ranges`` (QorIQ: the block's 0x300000 inside CCSR's window)."""
    addr = _cells(node / "reg", 0, _count(node.parent, "#address-cells"))
    bus = node.parent
    while bus not in (DEVICE_TREE, bus.parent):  # up to the root, where addresses are the CPU's
        if not (bus / "ranges").exists():
            raise EngineError(f"caam: {bus} has no ranges to translate {addr:#x}: give base=0x...")
        raw = (bus / "ranges").read_bytes()
        inner, outer = _count(bus, "#address-cells"), _count(bus.parent, "#address-cells")
        size = _count(bus, "#size-cells")
        step = inner + outer + size
        for at in range(0, len(raw) // 4 - step + 1, step):
            child = _cells(raw, at, inner)
            if child <= addr < child + _cells(raw, at + inner + outer, size):
                addr += _cells(raw, at + inner, outer) - child
                break
        else:
            if raw:  # an empty ranges is the identity
                raise EngineError(f"caam: {addr:#x} is outside {bus}'s ranges: give base=0x...")
        bus = bus.parent
    return addr


def _count(node: Path, name: str) -> int:
    """``#address-cells`` / ``#size-cells`` in force below ``node``: its own, else the nearest
    ancestor's, else 1 (as Linux reads them)."""
    for at in (node, *node.parents):
        if (at / name).exists():
            return _cells(at / name, 0, 1)
        if at == DEVICE_TREE:
            break
    return 1


def _cells(raw: Path | bytes, at: int, n: int) -> int:
    """``n`` big-endian 32-bit cells from cell ``at`` of a property (or its bytes) as one number."""
    data = raw.read_bytes() if isinstance(raw, Path) else raw
    return int.from_bytes(data[4 * at : 4 * (at + n)], "big")


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower()
    if text and text[-1] in units:
        return int(text[:-1], 0) * units[text[-1]]
    return int(text, 0)


__all__ = ["CaamEngine", "from_spec"]
