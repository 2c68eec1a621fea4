"""Where the engine path's instructions go, layer by layer: one AES-128-GCM 64 B encrypt and one
AES-128-CTR ``Cipher.update`` of 1400 B, on a provider whose one engine is the pass-through
(it answers by the software engine, so the whole path costs what ``run --engines passthrough``
pays).

Each layer runs in a child process under callgrind (runs of N and 6N ops, the per-op
difference: start-up taken out; steady on a loaded machine). Two chains from the same floor,
each layer adding one part of the path to the one before:

the engine route (what the public call takes, see docs/explanation/how-an-op-runs.md):
  openssl    `cryptography` called directly (the floor: the work itself)
  session    the pass-through engine's session called directly (``session.encrypt``,
             ``session.update``): what the engine itself adds
  route      the public call (``AESGCM.encrypt``, ``update`` on a ``Cipher`` context): checks,
             routing and counting in the compiled path, then the session

the ordinary path (an op the route does not take: a decline, a fault, a window, adaptive
routing or a cross-check on):
  openssl    as above
  engine     the pass-through engine's ``run`` on a ready Op: engine dispatch, the software
             engine's own set-up (key schedule, context) and OpenSSL
  validate   + ``validate_op`` (GCM only: a chained ``Cipher`` context checks its ops itself)
  lane       + ``Lane.run``: routing (``_offer``), the engine call, counting
  op         + the Op built per call

``partial`` is the floor of any layer: the instructions ``functools.partial`` adds to a call.

    python benchmarks/enginepath_parts.py [--ops N] [--cases gcm64,ctr-update]
"""

from __future__ import annotations

import argparse
import functools
import sys

from run_overhead import instructions

CHAINS = {
    "gcm64": (("openssl", "session", "route"), ("openssl", "engine", "validate", "lane", "op")),
    "ctr-update": (("openssl", "session", "route"), ("openssl", "engine", "lane", "op")),
}
#: The CTR ops a context sends, made once and cycled through (one op in CYCLE starts the
#: chain again): the set-up is the same in the runs of N and 6N ops, so it cancels out.
CYCLE = 500


def _gcm64(layer: str, n: int) -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM as PlainAESGCM

    from cryptoffload import Provider, using
    from cryptoffload.aead import AESGCM
    from cryptoffload.core.ops import AeadOp
    from cryptoffload.core.validate import validate_op
    from cryptoffload.engines.passthrough import PassThroughEngine

    key, nonce, data = bytes(range(16)), bytes(12), bytes(64)
    provider = Provider([PassThroughEngine()])
    engine = provider._routed[0]
    lane = provider.lane("aes-128-gcm")
    op = AeadOp("aes-128-gcm", "encrypt", key, nonce, data, None, 16)
    if layer == "openssl":
        plain = PlainAESGCM(key)
        for _ in range(n):
            plain.encrypt(nonce, data, None)
    elif layer == "session":
        session = engine.session(AeadOp("aes-128-gcm", "encrypt", key, None, None, None, 16))
        for _ in range(n):
            session.encrypt(nonce, data, None)
    elif layer == "engine":
        for _ in range(n):
            engine.run(op)
    elif layer == "validate":
        for _ in range(n):
            validate_op(op)
            engine.run(op)
    elif layer == "lane":
        for _ in range(n):
            lane.run(op)
    elif layer == "op":
        for _ in range(n):
            lane.run(AeadOp("aes-128-gcm", "encrypt", key, nonce, data, None, 16))
    else:
        box = AESGCM(key)
        with using(provider):
            for _ in range(n):
                box.encrypt(nonce, data, None)


def _ctr_update(layer: str, n: int) -> None:
    from cryptography.hazmat.primitives.ciphers import Cipher as PlainCipher
    from cryptography.hazmat.primitives.ciphers import algorithms as plain_algorithms
    from cryptography.hazmat.primitives.ciphers import modes as plain_modes

    from cryptoffload import Provider, using
    from cryptoffload.ciphers import Cipher, algorithms, modes
    from cryptoffload.core.ops import CipherOp
    from cryptoffload.engines.passthrough import PassThroughEngine

    key, iv, record = bytes(range(16)), bytes(16), bytes(1400)
    sent: list[CipherOp] = []

    class Recording(PassThroughEngine):
        """The pass-through engine, keeping each op it is sent (for the layers below)."""

        def run(self, op: CipherOp) -> object:
            sent.append(op)
            return super().run(op)

    recorder = Provider([Recording()])
    with using(recorder):
        stream = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
        for _ in range(CYCLE):
            stream.update(record)
    ops = [CipherOp(op.alg, op.kind, op.key, op.iv, bytes(op.data), None) for op in sent]
    fields = [(op.alg, op.kind, op.key, op.iv, op.data) for op in ops]
    provider = Provider([PassThroughEngine()])
    engine = provider._routed[0]
    lane = provider.lane("aes-128-ctr")
    if layer == "openssl":
        plain = PlainCipher(plain_algorithms.AES(key), plain_modes.CTR(iv)).encryptor()
        for _ in range(n):
            plain.update(record)
    elif layer == "session":
        session = engine.session(CipherOp("aes-128-ctr", "encrypt", key, iv, None, None))
        for _ in range(n):
            session.update(record)
    elif layer == "engine":
        for i in range(n):
            engine.run(ops[i % CYCLE])
    elif layer == "lane":
        for i in range(n):
            lane.run(ops[i % CYCLE], True)
    elif layer == "op":
        for i in range(n):
            lane.run(CipherOp(*fields[i % CYCLE]), True)
    else:
        with using(provider):
            stream = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
            for _ in range(n):
                stream.update(record)


def _floor(how: str, n: int) -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM as PlainAESGCM

    key, nonce, data = bytes(range(16)), bytes(12), bytes(64)
    plain = PlainAESGCM(key)
    call = plain.encrypt if how == "direct" else functools.partial(plain.encrypt)
    for _ in range(n):
        call(nonce, data, None)


CHILDREN = {"gcm64": _gcm64, "ctr-update": _ctr_update, "floor": _floor}


def per_op(case: str, layer: str, ops: int) -> float:
    """Instructions per op of one layer (runs of ops and 6 * ops, start-up taken out)."""
    command = [sys.executable, __file__, "child", case, layer]
    short = instructions([*command, str(ops)])
    long = instructions([*command, str(6 * ops)])
    return (long - short) / (5 * ops)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        case, layer, n = sys.argv[2:5]
        CHILDREN[case](layer, int(n))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1000, help="N (default 1000)")
    parser.add_argument("--cases", default=",".join(CHAINS), help="comma-separated cases")
    args = parser.parse_args()
    partial = per_op("floor", "partial", args.ops) - per_op("floor", "direct", args.ops)
    print(f"functools.partial adds {partial:.0f} instructions to a call")
    for case in args.cases.split(","):
        counts: dict[str, float] = {}
        for chain, title in zip(
            CHAINS[case], ("the engine route", "the ordinary path"), strict=True
        ):
            print(f"{case}, {title}: instructions per op, each layer and what it adds")
            before = None
            for layer in chain:
                if layer not in counts:
                    counts[layer] = per_op(case, layer, args.ops)
                count = counts[layer]
                added = "" if before is None else f"{count - before:+10,.0f}"
                print(f"  {layer:<10}{count:>10,.0f}{added}", flush=True)
                before = count
            total = counts[chain[-1]] - counts["openssl"]
            print(f"  added over openssl {total:,.0f} ({total / partial:.1f} partials)")


if __name__ == "__main__":
    main()
