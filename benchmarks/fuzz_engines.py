"""Differential fuzzing: random operations through every engine set, held to software."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from differential import default_specs, gather_limit, run_campaign
from fuzz_cases import GENERATORS, keys_for, make_case

ABOUT = """\
Each case is a random operation of one family (AES modes through Cipher contexts, GCM and CCM
with random tag lengths, batches, SHA/HMAC/CMAC/GMAC with random chunkings and copies, RSA
sign/verify/encrypt/decrypt/raw, ECDSA, ECDH, FFDH, the DRBG), with random sizes (0, odd
lengths, the engines' 4 KiB and 64 KiB request limits), random keys, IVs, AAD and tags, and
invalid inputs of every kind the core rejects (lengths, types, ranges, altered tags and
signatures, peers off the curve or outside the group). It runs through the software-only
provider and through one provider per engine set (the engine in front of software, taking
every size); the two must give the same answer or raise the same exception class. Each engine
is also held to software op by op before fallback can hide anything (`crosscheck.compare`),
must never see an op that validation refuses, and its counters must say what it did.

Engine sets: software, takeall and chaos (the doubles of tests/doubles.py), the CAAM models,
cryptodev (over the stand-in of tests/cryptodev_standin.py when there is no /dev/crypto) and
afalg where the kernel has AF_ALG (run it in the rig: rig/run python3 benchmarks/...).
Case i of seed S is the same on every run (keys too): `--seed S --replay i` runs it again.

Run: python benchmarks/fuzz_engines.py --examples N [--engines SPEC,...] [--seed S]
     [--families aead,rsa,...] [--replay I] [--gather BYTES]
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, epilog=ABOUT, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", type=int, default=500, help="cases to run (default 500)")
    parser.add_argument("--engines", help="comma-separated engine specs (default: all present)")
    parser.add_argument("--seed", type=int, default=1, help="campaign seed (default 1)")
    parser.add_argument("--families", help=f"only these: {','.join(GENERATORS)}")
    parser.add_argument("--replay", type=int, help="run case I alone and print it")
    parser.add_argument("--reproducers", type=int, default=5, help="per engine (default 5)")
    parser.add_argument(
        "--gather",
        type=int,
        default=2048,
        help="bytes a hash/MAC context gathers before it opens an engine stream (default 2048, "
        "the library's own is 4 MiB)",
    )
    args = parser.parse_args(argv)
    specs = args.engines.split(",") if args.engines else default_specs()
    families = args.families.split(",") if args.families else None
    if families and (unknown := set(families) - set(GENERATORS)):
        parser.error(f"unknown families {sorted(unknown)}; there are {', '.join(GENERATORS)}")
    indices = [args.replay] if args.replay is not None else list(range(args.examples))
    if args.replay is not None:
        case = make_case(args.seed, args.replay, keys_for(args.seed), families)
        print(f"case {args.replay} of seed {args.seed}: [{case.family}] {case.alg} {case.text}")
    start = time.perf_counter()
    with gather_limit(args.gather):
        tallies, skipped = run_campaign(
            specs, args.seed, indices, keep=args.reproducers, families=families
        )
    took = time.perf_counter() - start
    print(
        f"{len(indices)} cases of seed {args.seed} through {len(tallies)} engine sets "
        f"in {took:.1f} s (streams from {args.gather} B)"
    )
    width = max([20, *(len(spec) + 1 for spec in [*tallies, *skipped])])
    header = (
        f"{'engine':<{width}} {'cases':>6} {'offered':>8} {'answered':>8} {'declined':>8} "
        f"{'faults':>6} {'mismatch':>8} {'err-class':>9} {'wrong':>5} {'invalid':>7} {'drift':>5}"
    )
    print(header)
    print("-" * len(header))
    for spec, t in tallies.items():
        print(
            f"{spec:<{width}} {t.cases:>6} {t.offered:>8} {t.answered:>8} "
            f"{sum(t.declined.values()):>8} {t.faults:>6} {t.mismatches:>8} "
            f"{t.disagreements:>9} {t.wrong:>5} {t.unvalidated:>7} {t.drift:>5}"
        )
    for spec, why in skipped.items():
        print(f"{spec:<{width}} not run: {why}")
    print(
        "offered: ops the engine was handed; answered: results and answers (a failed tag...); "
        "mismatch / err-class: the API's answer differs from the software provider's / one "
        "raised where the other did not or another class; wrong: an engine answer software "
        "contradicts (fallback hid it); invalid: an op validation refuses reached the engine; "
        "drift: the counters do not say what the engine did"
    )
    for spec, t in tallies.items():
        if t.refusals:
            print(
                f"  {spec}: {t.refusals} of its faults are RSA decryptions it refused "
                "(ValueError, as software does): the provider counts those as faults"
            )
        if t.declined:
            reasons = ", ".join(f"{r} {n}" for r, n in t.declined.most_common())
            print(f"  {spec} declined: {reasons}")
    for t in tallies.values():
        if t.reproducers:
            print(f"\n{t.spec}: first reproducers (faults of the chaos double not listed)")
            for line in t.reproducers:
                print(f"  {line}")
    return 1 if any(t.failures for t in tallies.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
