"""Where the software path's added time goes: AES-128-GCM encrypt, layer by layer, side by side.

benchmarks/overhead.py measures what AESGCM.encrypt adds over `cryptography` when only software
takes the algorithm. This script rebuilds that path a piece at a time in plain Python, with
the same operations the real one does, and times each against the direct call in paired rounds
in one process (medians of the pairwise differences), so each layer's share can be read off:

  call      a method that only calls `cryptography` (the floor of any wrapper in CPython)
  check     + the check that the bound lane is the provider in force (explicit, using() block,
            default: a ContextVar get and a list subscript), as the direct path does
  size      + the size test (bytes, its length outside the engines' window)
  room      + the record's room test (len of the deque against its limit)
  record    + the record itself (one deque append)
  ours      the real AESGCM.encrypt (cryptoffload.core.directpath: the compiled twin where it
            was built, so it may come out below ``call``; CRYPTOFFLOAD_PURE_PYTHON=1 for the
            pure-Python twin, which does the steps above)
  held      the real AESGCM.encrypt, an engine present and the policy holding every size back

Run: python benchmarks/overhead_parts.py [--rounds N] [--seconds S] [--sizes 64,16384]
"""

from __future__ import annotations

import argparse
import collections
import contextvars

from cryptography.hazmat.primitives.ciphers.aead import AESGCM as CAESGCM
from overhead import OpenSSLEngine, compare

import cryptoffload
from cryptoffload.aead import AESGCM

_in_force: contextvars.ContextVar[object] = contextvars.ContextVar("in_force", default=None)
_DEFAULT = [object()]


class Layers:
    """The direct path rebuilt step by step (each method adds one step to the previous one)."""

    __slots__ = ("_fast", "_pending", "_provider", "above", "below", "limit", "provider")

    def __init__(self, fast: CAESGCM) -> None:
        self._fast = fast
        self._provider = None
        self.provider = _DEFAULT[0]
        self.below, self.above, self.limit = 1 << 62, 1 << 62, 4096
        self._pending: collections.deque[int] = collections.deque()

    def call(self, nonce: bytes, data: bytes, aad: bytes | None) -> bytes:
        return self._fast.encrypt(nonce, data, aad)

    def check(self, nonce: bytes, data: bytes, aad: bytes | None) -> bytes:
        if (self._provider or _in_force.get() or _DEFAULT[0]) is self.provider:
            return self._fast.encrypt(nonce, data, aad)
        raise AssertionError

    def size(self, nonce: bytes, data: bytes, aad: bytes | None) -> bytes:
        if (
            (self._provider or _in_force.get() or _DEFAULT[0]) is self.provider
            and data.__class__ is bytes
            and ((n := len(data)) < self.below or n > self.above)
        ):
            return self._fast.encrypt(nonce, data, aad)
        raise AssertionError

    def room(self, nonce: bytes, data: bytes, aad: bytes | None) -> bytes:
        if (
            (self._provider or _in_force.get() or _DEFAULT[0]) is self.provider
            and data.__class__ is bytes
            and ((n := len(data)) < self.below or n > self.above)
            and len(self._pending) < self.limit
        ):
            return self._fast.encrypt(nonce, data, aad)
        raise AssertionError

    def record(self, nonce: bytes, data: bytes, aad: bytes | None) -> bytes:
        if (
            (self._provider or _in_force.get() or _DEFAULT[0]) is self.provider
            and data.__class__ is bytes
            and ((n := len(data)) < self.below or n > self.above)
            and len(pending := self._pending) < self.limit
        ):
            out = self._fast.encrypt(nonce, data, aad)
            pending.append(n)
            return out
        if len(self._pending) >= self.limit:
            self._pending.clear()
            return self.record(nonce, data, aad)
        raise AssertionError


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21, help="paired rounds per case")
    parser.add_argument("--seconds", type=float, default=0.05, help="time per round and side")
    parser.add_argument("--sizes", default="64,16384", help="payload sizes, comma-separated")
    args = parser.parse_args()
    cryptoffload.set_default_provider(cryptoffload.Provider([]))
    key, nonce = bytes(range(16)), bytes(12)
    direct, ours = CAESGCM(key), AESGCM(key)
    policy = cryptoffload.Policy(min_size={"aes-128-gcm": 2 << 20})
    held = AESGCM(key, provider=cryptoffload.Provider([OpenSSLEngine()], policy))
    layers = Layers(direct)
    print(f"{'size':>6} {'layer':10} {'added us':>9} {'ratio':>6}")
    for size in (int(s) for s in args.sizes.split(",")):
        data = bytes(size)
        assert ours.encrypt(nonce, data, None) == direct.encrypt(nonce, data, None)
        steps = {
            "call": layers.call,
            "check": layers.check,
            "size": layers.size,
            "room": layers.room,
            "record": layers.record,
            "ours": ours.encrypt,
            "held": held.encrypt,
        }
        for name, fn in steps.items():
            r = compare(
                name,
                size,
                lambda data=data: direct.encrypt(nonce, data, None),
                lambda fn=fn, data=data: fn(nonce, data, None),
                args,
            )
            print(f"{size:>6} {name:10} {r['added_us']:9.3f} {r['ratio']:6.3f}")


if __name__ == "__main__":
    main()
