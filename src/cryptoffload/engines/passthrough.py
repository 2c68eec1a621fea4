"""A pass-through engine: claims every algorithm and answers through the software engine.

For proving paths, not speed: with ``--engines passthrough`` every operation an application makes
takes the engine path (an Op built, validated above the engines, offered, counted under
``passthrough``), so the counters show everything that went through cryptoffload, and anything
left under ``software`` is what no engine op carries.
"""

from __future__ import annotations

# What the engine answers with is imported at its probe: `run --engines passthrough` builds it
# at start-up (its spec checked before the program starts) and probes it at the first op.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from cryptoffload.engines.base import Capabilities


class PassThroughEngine:
    """Every algorithm name claimed, every op answered by OpenSSL (as the software engine)."""

    name = "passthrough"

    def __init__(self) -> None:
        self._software: Any = None

    def probe(self) -> Capabilities:
        from cryptoffload.core.names import all_algorithms
        from cryptoffload.engines.base import Capabilities
        from cryptoffload.engines.software import SoftwareEngine, cipher_sessions, gcm_stream

        if type(self).open_aead_stream is PassThroughEngine.open_aead_stream:
            vars(self)["open_aead_stream"] = gcm_stream  # one frame fewer per GCM stream
        if self._software is None:
            self._software = software = SoftwareEngine()
            if type(self).run is PassThroughEngine.run:
                # The software engine's own run, bound: every op on this engine one frame
                # shorter (a subclass that defines run keeps its own).
                self.run = software.run  # type: ignore[method-assign]
                if type(self).session is PassThroughEngine.session:
                    # And its session, bound too (one is asked for per Cipher context):
                    # dropped again if this object is given a run of its own (__setattr__).
                    vars(self)["session"] = cipher_sessions(software.session)
        # No size threshold of its own: the built-in ones (policy.DEFAULT_MIN_SIZE, small
        # AES-CBC/CTR/ECB to software) pay a device's round trip back, and this engine has
        # none; without this, aioquic's 16-byte header-protection blocks stayed on software.
        # A policy's own min_size still wins.
        return Capabilities(
            available=True, algorithms=frozenset(all_algorithms()), min_size={"*": 0}
        )

    def run(self, op: Any) -> Any:
        software = self._software
        if software is None:  # run before any probe: the provider always probes first
            self.probe()
            software = self._software
        return software.run(op)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "run" and "session" in vars(self):
            del vars(self)["session"]  # its own run: its ops keep going through it
        object.__setattr__(self, name, value)

    def session(self, op: Any) -> Any:
        """The software engine's session for ``op``'s key (see ``SoftwareEngine.session``); none
        for a subclass that defines its own ``run`` (its ops keep going through it)."""
        if self._software is None:
            self.probe()
        own = vars(self).get("run")  # the probe's binding, or one set on this object
        if type(self).run is not PassThroughEngine.run or own != self._software.run:
            return None
        return self._software.session(op)

    def open_stream(self, op: Any) -> Any:
        """A running hash or HMAC (OpenSSL through hashlib/hmac); others decline ``streaming``."""
        import hashlib
        import hmac

        from cryptoffload.core.names import HASH_NAMES, XOF_NAMES
        from cryptoffload.errors import Unavailable

        name = op.alg[5:] if op.alg.startswith("hmac-") else op.alg
        if name not in HASH_NAMES or name in XOF_NAMES:
            raise Unavailable("streaming", op.alg)
        if op.alg.startswith("hmac-"):
            return _Stream(hmac.new(bytes(op.key), digestmod=HASH_NAMES[name]))
        return _Stream(hashlib.new(HASH_NAMES[name]))

    def open_aead_stream(self, op: Any) -> Any:
        """AES-GCM fed piece by piece (OpenSSL's context, see ``software.gcm_stream``); other
        AEADs decline ``streaming``. The probe binds ``gcm_stream`` itself in its place."""
        from cryptoffload.engines.software import gcm_stream

        return gcm_stream(op)


class _Stream:
    """A hash or HMAC state with the engine stream's members."""

    __slots__ = ("_state",)

    def __init__(self, state: Any) -> None:
        self._state = state

    def update(self, data: bytes) -> None:
        self._state.update(data)

    def copy(self) -> _Stream:
        return _Stream(self._state.copy())

    def finalize(self) -> bytes:
        return self._state.digest()

    def close(self) -> None:
        self._state = None


def from_spec(arg: str) -> PassThroughEngine:
    """``passthrough`` takes no options."""
    if arg:
        from cryptoffload.errors import UnknownEngine

        raise UnknownEngine(f"the passthrough engine takes no options, got 'passthrough:{arg}'")
    return PassThroughEngine()
