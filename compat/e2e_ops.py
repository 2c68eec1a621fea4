"""What the end-to-end scripts print last: the ops counted in their process, if cryptoffload ran."""

from __future__ import annotations

import sys


def print_ops() -> None:
    """The ops the provider in force counted, when the script runs under cryptoffload (it is
    never imported here otherwise: on `cryptography` alone the script says so)."""
    if "cryptoffload" not in sys.modules:
        print("ops: cryptoffload not loaded (the baseline, on cryptography)")
        return
    from cryptoffload import current

    rows = [
        (cell["ops"], engine, alg)
        for engine, algs in current().counters.snapshot().items()
        for alg, cell in algs.items()
        if cell["ops"]
    ]
    rows.sort(reverse=True)
    print(f"ops: {sum(r[0] for r in rows)} counted in this process")
    for ops, engine, alg in rows:
        print(f"  {engine:<12} {alg:<24} {ops}")
