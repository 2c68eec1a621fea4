"""Test strength by mutation: realistic one-line mutants of the core, engines, blocks, DRBG,
benchmark statistics and CAAM model, each run against the tests that should notice it.

Every mutant is applied to a private copy of ``src/`` and ``tests/`` as committed (HEAD; with
``--worktree``, as the working tree has them), never to the working tree itself; the tests
named for it then run there with that copy first on the import path. A mutant is *killed*
when those tests fail, *survives* when they pass, and is *stale* when its line is no longer
in the source (the list needs updating: reported, never counted as killed). The unmutated
copy runs first: every selected test file must pass before any score means anything.

Run: python benchmarks/mutants.py [--only ID[,ID]] [--jobs N] [--list] [--worktree]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Seconds a mutant's tests may take: a hang (a child that never returns) counts as noticed.
MUTANT_TIMEOUT = 180
BASELINE_TIMEOUT = 1800


@dataclass(frozen=True)
class Mutant:
    """One single-line change: ``old`` (exactly once in ``path``) becomes ``new``."""

    ident: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str


def m(ident: str, path: str, old: str, new: str, tests: str, why: str) -> Mutant:
    return Mutant(ident, f"src/cryptoffload/{path}", old, new, tuple(tests.split()), why)


MUTANTS = [
    # -- validation above the engines --
    m(
        "gcm-nonce-max",
        "core/validate.py",
        "# -gcm, not -ccm\n        if iv.__class__ is not bytes or not 8 <= len(iv) <= 128:",
        "# -gcm, not -ccm\n        if iv.__class__ is not bytes or not 8 <= len(iv) <= 129:",
        "tests/test_bad_input.py tests/test_vectors_aead.py",
        "GCM nonce of 129 bytes admitted",
    ),
    m(
        "ccm-nonce-max",
        "core/validate.py",
        "if not 7 <= len(nonce) <= 13:",
        "if not 7 <= len(nonce) <= 14:",
        "tests/test_bad_input.py tests/test_vectors_aead.py",
        "CCM nonce of 14 bytes admitted",
    ),
    m(
        "ffdh-peer-range",
        "core/validate.py",
        "if not 2 <= y <= p - 2:",
        "if not 1 <= y <= p - 1:",
        "tests/test_vectors_dh.py tests/test_ffdhe.py",
        "DH peer value 1 or p-1 admitted",
    ),
    m(
        "ec-point-range",
        "core/validate.py",
        "if not (0 <= x < curve.p and 0 <= y < curve.p):",
        "if not (0 <= x <= curve.p and 0 <= y <= curve.p):",
        "tests/test_vectors_ec.py tests/test_curves.py",
        "EC coordinate equal to p admitted",
    ),
    m(
        "cbc-iv-length",
        "core/validate.py",
        'if mode != "ecb" and (iv.__class__ is not bytes or len(iv) != block):',
        'if mode != "ecb" and (iv.__class__ is not bytes or len(iv) > block):',
        "tests/test_bad_input.py tests/test_vectors_aes.py",
        "short CBC IV admitted",
    ),
    # -- the lane: answers are not faults --
    m(
        "lane-answers",
        "core/lane.py",
        "_ANSWERS = (InvalidTag, InvalidSignature)",
        "_ANSWERS = (InvalidSignature,)",
        "tests/test_provider.py tests/test_batches.py tests/test_streams.py",
        "InvalidTag from an engine taken as a fault",
    ),
    # -- engines --
    m(
        "afalg-ebadmsg",
        "engines/afalg.py",
        "            if exc.errno == errno.EBADMSG:\n                raise InvalidTag from None",
        "            if exc.errno == errno.EBADMSG:\n                raise OSError(exc.errno, 'x')",
        "tests/test_afalg_standin.py",
        "EBADMSG from the kernel counted as a fault",
    ),
    m(
        "caam-icv",
        "engines/caam.py",
        "    except IcvError:\n        raise InvalidTag from None",
        "    except IcvError:\n        raise RuntimeError('icv') from None",
        "tests/test_caam_engine.py",
        "CAAM ICV error counted as a fault",
    ),
    m(
        "software-deterministic",
        "engines/software.py",
        "ec.ECDSA(Prehashed(op.hash_alg), deterministic_signing=op.deterministic)",
        "ec.ECDSA(Prehashed(op.hash_alg))",
        "tests/test_path_parity.py",
        "RFC 6979 request ignored by the software engine",
    ),
    # -- PKCS #1 on the raw-exponent path --
    m(
        "pss-padding-zero",
        "blocks/pkcs1.py",
        "if any(db[:one]) or db[one] != 0x01:",
        "if db[one] != 0x01:",
        "tests/test_pkcs1.py",
        "PSS padding bytes not checked for zero",
    ),
    m(
        "pss-trailer",
        "blocks/pkcs1.py",
        "or em[-1] != 0xBC:",
        "or em[-1] == 0x00:",
        "tests/test_pkcs1.py",
        "PSS trailer 0xBC not checked",
    ),
    m(
        "oaep-first-byte",
        "blocks/pkcs1.py",
        "good = _is_zero(em[0]) & int(hmac.compare_digest(db[:h_len], _hash(hash_alg, label)))",
        "good = int(hmac.compare_digest(db[:h_len], _hash(hash_alg, label)))",
        "tests/test_pkcs1.py",
        "OAEP leading zero byte not checked",
    ),
    m(
        "oaep-label",
        "blocks/pkcs1.py",
        "good = _is_zero(em[0]) & int(hmac.compare_digest(db[:h_len], _hash(hash_alg, label)))",
        "good = _is_zero(em[0])",
        "tests/test_pkcs1.py",
        "OAEP label hash not checked",
    ),
    m(
        "pkcs1v15-ps-length",
        "blocks/pkcs1.py",
        'return b"\\x00\\x01" + b"\\xff" * (em_len - len(t) - 3) + b"\\x00" + t',
        'return b"\\x00\\x01" + b"\\xff" * (em_len - len(t) - 4) + b"\\x00\\x00" + t',
        "tests/test_pkcs1.py",
        "PKCS #1 v1.5 signature padding one byte short",
    ),
    # -- DRBG --
    m(
        "drbg-counter",
        "blocks/ctr_drbg.py",
        "        self._reseed_counter += 1\n        return out",
        "        return out",
        "tests/test_ctr_drbg.py tests/test_drbg.py",
        "requests since the last seed not counted",
    ),
    m(
        "drbg-ctr-wrap",
        "blocks/ctr_drbg.py",
        'start = ((int.from_bytes(v, "big") + 1) % _MOD128).to_bytes(BLOCK_LEN, "big")',
        'start = (int.from_bytes(v, "big") % _MOD128).to_bytes(BLOCK_LEN, "big")',
        "tests/test_ctr_drbg.py",
        "CTR_DRBG counter not incremented before use",
    ),
    m(
        "drbg-fork",
        "drbg.py",
        "    for instance in list(_instances):\n        instance._forget()",
        "    for instance in list(_instances):\n        pass",
        "tests/test_drbg.py",
        "child after fork continues the parent's stream",
    ),
    # -- benchmark statistics --
    m(
        "crossover-kind",
        "tools/bench/sweep.py",
        '"kind": "crosses" if r0 < 1 else "falls"}',
        '"kind": "crosses" if r0 > 1 else "falls"}',
        "tests/test_bench_crossover.py",
        "crossover direction reversed",
    ),
    m(
        "crossover-always",
        "tools/bench/sweep.py",
        "if all(r >= 1 for _, r in pts):",
        "if all(r > 1 for _, r in pts):",
        "tests/test_bench_crossover.py",
        "a ratio of exactly 1 not taken as a win",
    ),
    m(
        "midranks-ties",
        "tools/bench/stats.py",
        "ranks[ordered[i]] = (i + 1) + (j + 1)",
        "ranks[ordered[i]] = 2 * (i + 1)",
        "tests/test_bench_compare.py tests/test_bench_spread.py",
        "tied values ranked without mid-ranks",
    ),
    # -- the CAAM model (the independent check of the driver) --
    m(
        "pkha-a-range",
        "caam/model/pkha.py",
        "if function != REDUCT and a >= n:",
        "if function != REDUCT and a > n:",
        "tests/test_caam_pkha.py",
        "PKHA A equal to N taken",
    ),
    m(
        "pkha-b-range",
        "caam/model/pkha.py",
        "SUB_BA, MULT) and b >= n:",
        "SUB_BA, MULT) and b > n:",
        "tests/test_caam_pkha.py",
        "PKHA B equal to N taken",
    ),
    m(
        "pkha-even-modulus",
        "caam/model/pkha.py",
        "if function in (MULT, EXPO) and n % 2 == 0:",
        "if function in (MULT,) and n % 2 == 0:",
        "tests/test_caam_pkha.py",
        "modular exponentiation with an even modulus taken",
    ),
    m(
        "model-gcm-icv",
        "caam/model/cha.py",
        "if not hmac.compare_digest(tag[: len(self._icv)], self._icv):",
        "if not hmac.compare_digest(tag[: len(self._icv) - 1], self._icv[:-1]):",
        "tests/test_caam_model.py tests/test_caam_engine.py tests/test_caam_linux.py",
        "GCM ICV check skips the last tag byte",
    ),
    m(
        "model-ccm-icv",
        "caam/model/cha.py",
        "if not hmac.compare_digest(self._tag[: len(self._icv)], self._icv):",
        "if not hmac.compare_digest(self._tag[: len(self._icv) - 1], self._icv[:-1]):",
        "tests/test_caam_model.py tests/test_caam_engine.py tests/test_caam_linux.py",
        "CCM ICV check skips the last tag byte",
    ),
    m(
        "model-hmac-icv",
        "caam/model/cha.py",
        "if self._icv_check and not hmac.compare_digest(digest[: len(self._icv)], self._icv):",
        "if False:",
        "tests/test_caam_model.py tests/test_caam_deco.py tests/test_caam_recipes.py",
        "MDHA ICV check never fails",
    ),
    m(
        "model-pad-length",
        "caam/model/mdha.py",
        "tail += bytes(-(len(tail) + alg.length_bytes) % alg.block_size)",
        "tail += bytes(-(len(tail) + alg.length_bytes + 1) % alg.block_size)",
        "tests/test_caam_model.py tests/test_caam_recipes.py",
        "MD padding one byte off",
    ),
    # -- the driver --
    m(
        "driver-wipe",
        "caam/jr/inflight.py",
        "                    write(phys, zeros[:size])",
        "                    pass",
        "tests/test_secrets.py",
        "job regions freed unwiped",
    ),
]


def export(to: Path, worktree: bool) -> None:
    """A private copy of what the tests need (src/, tests/, pyproject, README, docs/): as committed
    (HEAD), or as the working tree has them with ``worktree``."""
    names = ("src", "tests", "pyproject.toml", "README.md", "docs")
    if not worktree:
        archive = subprocess.run(
            ["git", "archive", "HEAD", *names], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(to)], input=archive, check=True)
        return
    for name in names:
        if (ROOT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
            shutil.copytree(ROOT / name, to / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, to / name)


def run_tests(where: Path, tests: tuple[str, ...], timeout: float) -> tuple[bool, float]:
    env = dict(os.environ, PYTHONPATH=str(where / "src"), PY_COLORS="0")
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
            cwd=where,
            env=env,
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return False, time.perf_counter() - start  # a hang is noticed: counted as killed
    return done.returncode == 0, time.perf_counter() - start


def try_mutant(mutant: Mutant, base: Path) -> tuple[str, float]:
    with tempfile.TemporaryDirectory(prefix=f"mutant-{mutant.ident}-") as tmp:
        where = Path(tmp)
        shutil.copytree(base, where, dirs_exist_ok=True)
        target = where / mutant.path
        text = target.read_text()
        if text.count(mutant.old) != 1:
            return "stale", 0.0
        target.write_text(text.replace(mutant.old, mutant.new))
        passed, took = run_tests(where, mutant.tests, MUTANT_TIMEOUT)
        return ("survived" if passed else "killed"), took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated mutant ids")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument(
        "--worktree", action="store_true", help="mutate the working tree's files, not HEAD's"
    )
    args = parser.parse_args()
    chosen = MUTANTS
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {mu.ident for mu in MUTANTS}
        if unknown:
            parser.error(f"unknown mutant ids: {', '.join(sorted(unknown))}")
        chosen = [mu for mu in MUTANTS if mu.ident in wanted]
    if args.list:
        for mu in chosen:
            print(f"{mu.ident:24} {mu.path:42} {mu.why}")
        return 0
    with tempfile.TemporaryDirectory(prefix="mutants-base-") as tmp:
        base = Path(tmp)
        export(base, args.worktree)
        tests = tuple(sorted({t for mu in chosen for t in mu.tests}))
        ok, took = run_tests(base, tests, BASELINE_TIMEOUT)
        print(f"unmutated: {len(tests)} test files {'pass' if ok else 'FAIL'} ({took:.0f} s)")
        if not ok:
            print("the unmutated copy fails its tests: no score means anything; fix that first")
            return 2
        results: dict[str, tuple[str, float]] = {}
        with ThreadPoolExecutor(args.jobs) as pool:
            futures = {mu.ident: pool.submit(try_mutant, mu, base) for mu in chosen}
            for mu in chosen:
                outcome, took = futures[mu.ident].result()
                results[mu.ident] = (outcome, took)
                print(f"{outcome:9} {mu.ident:24} {took:6.1f} s  {mu.why}", flush=True)
    killed = sum(1 for o, _ in results.values() if o == "killed")
    survived = [i for i, (o, _) in results.items() if o == "survived"]
    stale = [i for i, (o, _) in results.items() if o == "stale"]
    live = len(results) - len(stale)
    print(f"\nscore: {killed} of {live} live mutants killed", end="")
    print(f"; survivors: {', '.join(survived)}" if survived else "; no survivors", end="")
    print(f"; stale (update the list): {', '.join(stale)}" if stale else "")
    return 0 if not survived and not stale else 1


if __name__ == "__main__":
    sys.exit(main())
