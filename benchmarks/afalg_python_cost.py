"""What the AF_ALG engine's Python costs per cipher op, apart from the kernel (runs anywhere).

The engine's operation socket is replaced by a stand-in whose sendmsg_afalg and recv return at
once, so what is timed is the engine's own work per op: finding the socket, choosing the
request form, the calls. Printed beside a bare loop making the same two socket calls, the
floor any Python caller pays, and the full API (a Cipher context's update_into through a
Provider holding the engine: op record, validation, routing, counters). Measured side by side
in rounds (median), in ns per op. Under QEMU TCG this Python work is slowed far more than the
kernel's, which is why the rig's engine/C ratios at small sizes understate what a board would
show.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit

from cryptoffload import Policy, Provider
from cryptoffload.ciphers import Cipher, algorithms, modes
from cryptoffload.core.ops import CipherOp
from cryptoffload.engines.afalg import AfalgEngine
from cryptoffload.engines.base import Capabilities


class StandInSocket:
    """Answers sendmsg_afalg and recv at once, with a result made in advance."""

    def __init__(self, size: int) -> None:
        self.result = bytes(size)

    def sendmsg_afalg(self, msg: object = None, *, op: int = 0, iv: bytes | None = None) -> int:
        return 0

    def recv(self, n: int) -> bytes:
        return self.result

    def recv_into(self, buf: memoryview, n: int = 0) -> int:
        n = n or len(buf)
        buf[:n] = self.result[:n]  # the kernel's copy into the caller's buffer
        return n


class _Claiming:
    """The stand-in engine as a provider sees it: available, claiming AES-128-CBC."""

    def __init__(self, engine: AfalgEngine) -> None:
        self.name = "afalg:stand-in"
        self.run = engine.run

    def probe(self) -> Capabilities:
        return Capabilities(True, algorithms=frozenset({"aes-128-cbc"}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,16384")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=200_000)
    args = parser.parse_args()
    print(
        f"{'size':>6} {'bare calls ns/op':>17} {'engine.run ns/op':>17} {'engine adds ns':>15}"
        f" {'API ns/op':>10} {'API adds ns':>12}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        key, iv, data = bytes(16), bytes(16), bytes(size)
        op = CipherOp("aes-128-cbc", "encrypt", key, iv, data)
        sock = StandInSocket(size)
        engine = AfalgEngine(driver="stand-in")
        engine._bind["aes-128-cbc"] = ("skcipher", "stand-in")
        engine._local.fast[("aes-128-cbc", key)] = sock

        def bare(sock: StandInSocket = sock, data: bytes = data, iv: bytes = iv) -> bytes:
            sock.sendmsg_afalg([data], op=1, iv=iv)
            return sock.recv(len(data))

        assert engine.run(op) is sock.result
        provider = Provider([_Claiming(engine)], policy=Policy(min_size={"*": 0}))
        enc = Cipher(algorithms.AES(key), modes.CBC(iv), provider=provider).encryptor()
        out = bytearray(size + 16)
        bares, runs, apis = [], [], []
        for _ in range(args.rounds):
            bares.append(min(timeit.repeat(bare, number=args.number, repeat=3)) / args.number)
            runs.append(
                min(timeit.repeat(lambda e=engine, o=op: e.run(o), number=args.number, repeat=3))
                / args.number
            )
            apis.append(
                min(
                    timeit.repeat(
                        lambda c=enc, d=data, o=out: c.update_into(d, o),
                        number=args.number,
                        repeat=3,
                    )
                )
                / args.number
            )
        b, r = statistics.median(bares) * 1e9, statistics.median(runs) * 1e9
        a = statistics.median(apis) * 1e9
        print(f"{size:>6} {b:17.0f} {r:17.0f} {r - b:15.0f} {a:10.0f} {a - b:12.0f}")
        assert provider.counters.snapshot()["software"] == {}
    return 0


if __name__ == "__main__":
    sys.exit(main())
