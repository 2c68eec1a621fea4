"""The Engine protocol, described member by member, and the Capabilities an engine reports.

Engines are duck-typed so that an engine written outside this package works unchanged:
any object with these members is an engine.

``name: str``
    Unique within a provider: ``software``, ``afalg``, ``cryptodev``, ``caam``, optionally with a
    qualifier (``afalg:cbc-aes-caam``). Counters and bench rows use it.

``probe() -> Capabilities``
    Says whether the engine can run here and which algorithm names it claims. Called once when a
    provider is built; may be slow (opens devices, reads /proc/crypto), must not raise (one
    that raises is listed as unavailable, ``probe failed: ...``). Anything but a Capabilities
    returned, or a member missing, and the Provider refuses the engine with TypeError.

``run(op) -> result``
    Performs one Op (a :mod:`cryptoffload.core.ops` record: ``CipherOp``, ``AeadOp``, ``HashOp``,
    ``MacOp``, ``RsaOp``, ``EcdsaOp``, ``EcdhOp``, ``DhOp``, ``RngOp``, ``XdhOp``, ``EddsaOp``,
    ``DsaOp``, ``KdfOp``, ``KeywrapOp``, ``MlkemOp``, ``MldsaOp``), returning the result that
    ``ops.CONTRACT`` gives for its ``(family, kind)``; the fields each sets mean what
    ``ops.FIELDS`` says. Raises :class:`cryptoffload.errors.Unavailable` (with a reason) to
    decline, including for a field it cannot honour (an RFC 6979 ``deterministic`` signature, a
    nonce length); any other exception is a fault, counted, and the provider moves on. Results
    of a failed authentication are raised as ``InvalidTag`` / ``InvalidSignature`` /
    ``InvalidUnwrap`` (a key unwrap): they are answers, not faults; so is ``errors.NoResult``
    where the contract gives a ValueError as the result (an RSA ciphertext that does not decrypt,
    an all-zero X25519/X448 agreement), while a plain ValueError is a fault. An engine never
    checks what the provider already validated, and never returns partial output (a cipher op's
    ``out`` buffer may be left half written on a fault: whoever finishes the op writes all of it).

    Results are held to software's: ``cryptoffload verify`` redoes every result of its workload
    in software, and a provider built with ``cross_check=RATE`` (say ``1/1000``; 0, the default,
    is off and costs nothing) redoes that share of results at random. A wrong result (or a
    failed tag or signature that software accepts) is then replaced by software's answer,
    counted as a fault and in ``mismatches``, logged as an error, and the engine gets no more
    operations of that algorithm from that provider (declined ``disabled``).

Optional members, read with ``getattr`` and a default:

``min_size: Mapping[str, int]`` on Capabilities
    The engine's own suggestion of the smallest payload worth offloading, per algorithm. A policy
    value for the same algorithm overrides it.
``detail: Mapping[str, object]`` on Capabilities
    What the engine wants ``cryptoffload engines`` to show (drivers, versions, priorities). Two
    keys are read by tools: ``"algorithms"``, per algorithm claimed, the driver behind it as
    ``{"driver": str, "hardware": bool, ...}`` (``verify`` reports it as the binding, flagging
    software behind an engine whose ``hardware_only`` is true); ``"alternatives"``, per
    algorithm, other drivers that could do it and are not used now, each ``{"driver": str,
    "priority": int, "spec": str}`` with the spec that pins it (``verify`` and ``calibrate``
    take those engines too; ``engines`` lists them).
``hardware_only: bool`` on the engine
    True when the engine promises that everything it claims runs on a device (plain ``afalg``).
``close() -> None`` on the engine
    Releases devices and sockets.
``run_batch(ops) -> list`` on the engine
    Many ops of one algorithm at once (``AESGCM.encrypt_many``, ``hashes.digest_many``...), all
    validated and admitted by the policy: an engine that can put them in flight together (the
    CAAM's job ring) returns, in order, each op's result or the exception that is its outcome:
    ``Unavailable`` declines that item (the next engine or software takes it), ``InvalidTag`` /
    ``InvalidSignature`` are answers, any other exception is a fault for that item. Raising
    declines or fails the whole batch. Without it, the provider offers the ops one by one.
``open_stream(op) -> stream`` on the engine
    For hashes and MACs whose message is too long to gather into one op: a running state kept by
    the engine. ``op`` carries the algorithm and key (its data is empty). The stream has
    ``update(data)``, ``copy() -> stream`` (an independent state with the same input so far),
    ``finalize() -> bytes`` (the digest or tag; the stream is spent) and ``close()``. Raise
    ``Unavailable`` to decline; any other exception from the stream is a fault, after which the
    context feeds the whole message to software (it keeps what it sent until the end).
``open_aead_stream(op) -> stream`` on the engine
    For AES-GCM fed piece by piece (``Cipher(AES(key), GCM(iv))``'s encryptor and decryptor): a
    running state (GHASH, counter, lengths) kept by the engine. ``op`` is an ``AeadOp`` with the
    algorithm, kind (``encrypt`` / ``decrypt``), key and nonce (data and aad empty, tag_length
    16). The stream has ``update_aad(data)`` (all AAD comes before any data), ``update(data) ->
    bytes`` (the output for exactly those bytes, at once: a decryption's plaintext leaves before
    the tag is checked, as in `cryptography`), ``finalize(tag=None) -> bytes`` (encryption: the
    16-byte tag; decryption: checks ``tag``, 4 to 16 bytes, returns b"" or raises
    ``InvalidTag``; the stream is spent) and ``close()``. Raise ``Unavailable`` to decline (an
    engine without the member is counted as declining ``streaming``); any other exception from
    the stream is a fault, after which software redoes the AAD and data sent so far (the context
    keeps them until the end) and finishes with the same outputs. Counted as one op of the data
    bytes when the stream ends.
``session(op) -> session`` on the engine
    What the engine keeps so that the provider's compiled path can hand it ops directly, with
    no Op built per op (the engine route, ``Lane.set_engine_route``): one per key for an AEAD,
    one per stream for a ``Cipher`` context in ECB, CBC or CTR, one per algorithm for a hash or
    an HMAC. ``op`` carries what stays fixed, its other fields None: an ``AeadOp`` with the
    algorithm, key and tag length; a ``CipherOp`` with the algorithm, kind, key and the
    chaining value the stream starts from as ``iv``; a ``HashOp`` with the algorithm; an HMAC's
    ``MacOp`` with the algorithm (no key). The session has, as `cryptography`'s objects do:
    for an AEAD, ``encrypt(nonce, data, aad)`` and ``decrypt(nonce, data, aad)`` (ciphertext
    and tag in one buffer; ``InvalidTag``); for a stream, ``update(data)`` and
    ``update_into(data, buf)`` (the chaining state carried from call to call; ECB and CBC hold
    a partial block back); for a hash, ``digest(data)``; for an HMAC, ``mac(key, data)``.
    Every call is one op, counted as ``run``'s would be, and raises what ``run`` raises:
    ``Unavailable`` declines that op, ``InvalidTag`` is an answer, anything else is a fault;
    the next engine or software then does it (a stream's session is dropped and the update
    redone from the chaining state the context kept). The provider validates every field
    first, offers a session only ops whose size the policy gives that engine, and uses
    sessions only of the first engine on an algorithm's route, without adaptive routing or a
    cross-check (their ops go through ``run``). Return None (or raise) to keep none: the ops go
    through ``run``. The software and pass-through engines keep sessions, and the CAAM
    engine for AES-GCM and AES-CCM (its job ring's recipe, per key).
``buffer(n) -> DmaBuffer`` on the engine
    ``n`` bytes of memory the engine's device reads and writes (the CAAM's DMA pool), handed to
    the caller as a :class:`cryptoffload.DmaBuffer` (a writable bytes-like object; ``close()``
    gives it back, not wiped). When an op's ``data``, a cipher op's ``out`` or an AEAD op's
    ``into`` is a DmaBuffer of this engine (or a byte view whose ``obj`` is one; ``dmabuffer.
    locate(x, engine)`` finds its bus address), the engine points its jobs at that memory
    instead of copying. A DmaBuffer of another engine, or of a closed one, is an ordinary
    buffer to every engine. The API marks the buffers of an op busy while it runs
    (BufferError for a second op on them); an engine whose device may still write one after
    the op ended (a ring that would not reset) pins it busy for good.
``AeadOp.into`` (on ``AeadIntoOp``, from ``encrypt_into`` / ``decrypt_into``)
    The caller's output buffer, exactly as long as the result, or None. An engine may write the
    result there and return its length (an int) instead of bytes; if it does, a failed tag
    leaves no plaintext there (zeros). Engines that ignore it return bytes, copied by the API.
``start(op) -> Pending | None`` on the engine
    For the ``*_async`` methods (:mod:`cryptoffload.core.asyncio_lane`): puts ``op`` (validated and
    admitted by the policy, as for ``run``) in flight and returns without waiting for it. The
    Pending has ``done() -> bool``, ``result(timeout=None)`` (blocks until settled, driving the
    operation forward where nothing else would, then returns or raises exactly what ``run``
    would: ``Unavailable`` declines, ``InvalidTag`` / ``InvalidSignature`` / ``NoResult`` are
    answers, anything else is a fault) and ``add_done_callback(fn)`` (``fn(pending)`` once
    settled, on the settling thread; at once if it already is); :class:`cryptoffload.engines.
    pending.Pending` is one. ``start`` may itself raise what ``run`` raises (a decline before
    anything was put in flight), and returns None for an op it only runs whole (the asyncio
    layer then calls ``run`` in the loop's default executor). ``run`` stays as it is: ``start``
    is another way in, not a replacement. Whatever the caller does with the Pending (an await
    cancelled), the operation keeps the memory it reads and writes until it is complete.
``completion_fd() -> int | None`` and ``service() -> None`` on the engine
    With ``start``: a file descriptor that becomes readable when operations completed, and
    what to call then (read or acknowledge the fd, collect completions, settle their Pendings:
    their callbacks run inside ``service``). An event loop watches the fd
    (``loop.add_reader(fd, engine.service)``, once per loop and engine), so many operations are
    in flight from one thread. None: the engine has no such fd now; a Pending not done when
    ``start`` returns is then waited for with ``result()`` in the executor.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:
    from cryptoffload.core.ops import Op


#: The default of a mapping a probe leaves out: empty, and read-only as the record is.
_NOTHING: Mapping[str, Any] = MappingProxyType({})


class Capabilities(NamedTuple):
    """What an engine's probe found: available or not and why, and what it claims.

    An immutable record (a named tuple: ``dataclasses`` would cost every program that starts
    under ``run`` the import of ``inspect``, about 10 ms here)."""

    available: bool
    reason: str = ""
    algorithms: frozenset[str] = frozenset()
    min_size: Mapping[str, int] = _NOTHING
    detail: Mapping[str, Any] = _NOTHING


@runtime_checkable
class Engine(Protocol):
    """An engine: see the module docstring for each member's contract."""

    name: str

    def probe(self) -> Capabilities:
        """Report availability and claimed algorithms; never raise."""
        ...

    def run(self, op: Op) -> Any:
        """Perform one op, or raise Unavailable(reason) to decline."""
        ...
