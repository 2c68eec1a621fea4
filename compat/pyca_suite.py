"""Runs pyca/cryptography's own test files with imports switched to cryptoffload, and as they are.

The `cryptography` sdist matching the installed version is fetched from the package index's simple
API (its sha256 checked against the index's link) and cached; the vectors come from the installed
`cryptography_vectors`. The listed test files (and the helpers they build their objects with) get
their ``cryptography.hazmat.primitives`` imports rewritten to the mirrored cryptoffload modules,
and run twice: with the default provider, and with a pass-through engine claiming every algorithm
(so every op takes the engine path). Each is printed per file beside the unrewritten files run
against `cryptography` itself, with how many passing tests ran cryptoffload's own code and how
many it counted operations for. A test that cannot run because the installed
`cryptography_vectors` lacks a file it reads (the index may serve an older release than
`cryptography`'s) is listed as such, not failed. Exit status 1 when any test's outcome, or any
file's import, differs from `cryptography`'s.

    python3 compat/pyca_suite.py [--files test_aes,test_hashes] [--config default|engine|both]
                                 [--json] [-v]
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import importlib
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import warnings
from typing import Any

from sdist import fetch_sdist

HERE = pathlib.Path(__file__).resolve().parent
TESTS = "tests/hazmat/primitives"

#: The test files of issue 15, under tests/hazmat/primitives/.
FILES = (
    "test_aead",
    "test_aes",
    "test_aes_gcm",
    "test_block",
    "test_ciphers",
    "test_cmac",
    "test_dh",
    "test_ec",
    "test_hashes",
    "test_hash_vectors",
    "test_hmac",
    "test_hmac_vectors",
    "test_rsa",
    "test_serialization",
)
#: More files of the modules cryptoffload mirrors: the key types added for the issue (DSA,
#: Ed25519/Ed448, X25519/X448), the other ciphers (ChaCha20, SM4, Camellia and the decrepit
#: ones, which pyca tests through ``primitives.ciphers.Cipher``), XOFHash, Poly1305, the
#: asymmetric utilities and block padding.
MORE = (
    "test_dsa",
    "test_ed25519",
    "test_ed448",
    "test_x25519",
    "test_x448",
    "test_chacha20",
    "test_sm4",
    "test_camellia",
    "test_xofhash",
    "test_poly1305",
    "test_asym_utils",
    "test_padding",
    "decrepit/test_3des",
    "decrepit/test_algorithms",
    "decrepit/test_arc4",
    "decrepit/test_rc2",
    "test_hkdf",
    "test_hkdf_vectors",
    "test_x963kdf",
    "test_x963_vectors",
    "test_concatkdf",
    "test_kbkdf",
    "test_kbkdf_vectors",
)
#: The files of issue 21's paths: the password KDFs, key wrap, constant_time, ML-KEM, ML-DSA,
#: HPKE, HOTP/TOTP, Fernet (tests/test_fernet.py, outside tests/hazmat/primitives), and the
#: PKCS #12, PKCS #7 and SSH serialization modules keys cross.
PATHS = (
    "test_pbkdf2hmac",
    "test_pbkdf2hmac_vectors",
    "test_scrypt",
    "test_argon2",
    "test_keywrap",
    "test_constant_time",
    "test_mlkem",
    "test_mldsa",
    "test_hpke",
    "twofactor/test_hotp",
    "twofactor/test_totp",
    "test_fernet",
    "test_pkcs12",
    "test_pkcs7",
    "test_ssh",
)
#: Files that are not under tests/hazmat/primitives: their paths in the sdist.
ELSEWHERE = {"test_fernet": "tests/test_fernet.py"}
#: Helpers the test files build their objects with: rewritten too, or the vector tests they
#: generate would run on `cryptography` and pass without touching cryptoffload.
HELPERS = (
    f"{TESTS}/utils.py",
    f"{TESTS}/fixtures_dh.py",
    f"{TESTS}/fixtures_ec.py",
    f"{TESTS}/fixtures_rsa.py",
    f"{TESTS}/fixtures_dsa.py",
)
# tests/doubles.py is left as it is: its objects stand for a user's own implementations of
# `cryptography`'s interfaces (a hash algorithm, a mode), which cryptoffload takes as they are.

PREFIX = "cryptography.hazmat.primitives"
#: cryptography module (after ``cryptography.hazmat.primitives.``) -> its cryptoffload mirror.
#: Modules not listed, or listed but absent from cryptoffload, stay on `cryptography`.
MODULES = {
    "ciphers": "cryptoffload.ciphers",
    "ciphers.aead": "cryptoffload.aead",
    "ciphers.algorithms": "cryptoffload.ciphers.algorithms",
    "ciphers.modes": "cryptoffload.ciphers.modes",
    "ciphers.base": "cryptoffload.ciphers.base",
    "hashes": "cryptoffload.hashes",
    "hmac": "cryptoffload.hmac",
    "cmac": "cryptoffload.cmac",
    "serialization": "cryptoffload.serialization",
    "serialization.base": "cryptoffload.serialization.base",
    "serialization.pkcs12": "cryptoffload.serialization.pkcs12",
    "serialization.pkcs7": "cryptoffload.serialization.pkcs7",
    "serialization.ssh": "cryptoffload.serialization.ssh",
    "asymmetric.rsa": "cryptoffload.rsa",
    "asymmetric.ec": "cryptoffload.ec",
    "asymmetric.dh": "cryptoffload.dh",
    "asymmetric.dsa": "cryptoffload.dsa",
    "asymmetric.ed25519": "cryptoffload.ed25519",
    "asymmetric.ed448": "cryptoffload.ed448",
    "asymmetric.x25519": "cryptoffload.x25519",
    "asymmetric.x448": "cryptoffload.x448",
    "asymmetric.padding": "cryptoffload.asymmetric.padding",
    "asymmetric.utils": "cryptoffload.asymmetric.utils",
    "asymmetric.types": "cryptoffload.asymmetric.types",
    "poly1305": "cryptoffload.poly1305",
    "padding": "cryptoffload.padding",
    "kdf": "cryptoffload.kdf",
    "kdf.hkdf": "cryptoffload.kdf.hkdf",
    "kdf.x963kdf": "cryptoffload.kdf.x963kdf",
    "kdf.concatkdf": "cryptoffload.kdf.concatkdf",
    "kdf.kbkdf": "cryptoffload.kdf.kbkdf",
    "kdf.pbkdf2": "cryptoffload.kdf.pbkdf2",
    "kdf.scrypt": "cryptoffload.kdf.scrypt",
    "kdf.argon2": "cryptoffload.kdf.argon2",
    "keywrap": "cryptoffload.keywrap",
    "constant_time": "cryptoffload.constant_time",
    "asymmetric.mlkem": "cryptoffload.mlkem",
    "asymmetric.mldsa": "cryptoffload.mldsa",
    "hpke": "cryptoffload.hpke",
    "twofactor": "cryptoffload.twofactor",
    "twofactor.hotp": "cryptoffload.twofactor.hotp",
    "twofactor.totp": "cryptoffload.twofactor.totp",
}
#: Modules outside ``cryptography.hazmat.primitives`` that cryptoffload mirrors.
OTHER_MODULES = {"cryptography.fernet": "cryptoffload.fernet"}

#: Tests that drive `cryptography`'s private internals, with the reason: left out of the
#: comparison (fnmatch patterns over pytest node ids, file-relative).
PRIVATE = {
    "test_aes_gcm.py::TestAESModeGCM::test_gcm_ciphertext_limit": (
        "advances the context's counter with rust_openssl.ciphers._advance, a private hook of "
        "cryptography's own context class"
    ),
    "test_aes_gcm.py::TestAESModeGCM::test_gcm_aad_limit": (
        "advances the context's AAD counter with rust_openssl.ciphers._advance_aad, a private "
        "hook of cryptography's own context class"
    ),
    "test_hpke.py::TestHPKE::test_wrong_aad_fails": (
        "seals and opens through rust_openssl.hpke._encrypt_with_aad/_decrypt_with_aad, private "
        "functions of cryptography's native module that take only its own key objects"
    ),
    "test_hpke.py::TestHPKE::test_vector_decryption": (
        "opens the RFC 9180 vectors through rust_openssl.hpke._decrypt_with_aad, a private "
        "function of cryptography's native module that takes only its own key objects"
    ),
}

_NOT_DEPRECATED = (
    "asserts cryptography's FFDH deprecation warning (DeprecatedIn50); cryptoffload's FFDH runs "
    "on a path that is not deprecated (blocks/ffdh.py, GMP), so by design it warns nothing"
)
#: Tests that check a deprecation warning of `cryptography`'s own FFDH code: a difference by
#: design, left out of the comparison with the reason.
WARNS_DEPRECATION = {
    pattern: _NOT_DEPRECATED
    for pattern in (
        "test_dh.py::TestDHParameterSerialization::test_parameter_bytes",
        "test_dh.py::TestDHParameterSerialization::test_parameter_bytes_match",
        "test_dh.py::TestDHParameterSerialization::test_public_bytes_values",
        "test_dh.py::TestDHParameterSerialization::test_load_pkcs3_with_private_value_length",
        "test_serialization.py::*::test_wrong_parameters_format",
        "test_serialization.py::TestDHSerialization::test_dh_public_key",
        "test_serialization.py::TestDHSerialization::test_dh_private_key",
        # 51: a DH key in PKCS #8 v2 (its vectors are not in cryptography_vectors 50)
        "test_serialization.py::*::test_load_pkcs8_private_key_v2_with_public_key[[]dh-*",
    )
}
EXCLUDED = {**PRIVATE, **WARNS_DEPRECATION}

CONFIGS = ("default", "engine")


# -- the sdist ------------------------------------------------------------------------------------


def installed_version() -> str:
    """The version of `cryptography` installed here."""
    return importlib.metadata.version("cryptography")


def extract_tests(sdist: pathlib.Path, dest: pathlib.Path) -> pathlib.Path:
    """The sdist's ``tests`` tree under ``dest`` (returns the directory holding ``tests``)."""
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        members = [m for m in tar.getmembers() if m.name.startswith(f"{top}/tests/")]
        tar.extractall(dest, members=members, filter="data")
    root = dest / top
    (root / "pytest.ini").write_text(
        "[pytest]\n"
        "markers =\n"
        "    skip_fips: not run in FIPS mode\n"
        "    supported: requires only_if and skip_message\n"
        "    malloc_failure: expects malloc to fail\n"
    )
    return root


# -- the rewrite ----------------------------------------------------------------------------------


def _mirror(module: str) -> Any:
    """The cryptoffload module mirroring ``module`` (cryptography's), or None."""
    rest = module.removeprefix(PREFIX).lstrip(".")
    target = OTHER_MODULES.get(module) or MODULES.get(rest)
    if target is None:
        return None
    try:
        if importlib.util.find_spec(target) is None:
            return None
    except ModuleNotFoundError:
        return None
    return importlib.import_module(target)


def rewrite(source: str) -> tuple[str, list[str]]:
    """``source`` with its ``cryptography.hazmat.primitives`` imports switched to cryptoffload,
    name by name where the mirror has the name; and the names left on `cryptography`."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    kept: list[str] = []
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not (
            (node.module or "").startswith(PREFIX) or node.module in OTHER_MODULES
        ):
            continue
        moved: dict[str, list[str]] = {}
        stay: list[str] = []
        for alias in node.names:
            text = alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"
            target = _target(node.module, alias.name)
            if target is None:
                stay.append(text)
                kept.append(f"{node.module}.{alias.name}")
            else:
                moved.setdefault(target, []).append(text)
        statements = [f"from {mod} import {', '.join(names)}" for mod, names in moved.items()]
        if stay:
            statements.append(f"from {node.module} import {', '.join(stay)}")
        first, last = node.lineno - 1, node.end_lineno - 1
        indent = lines[first][: node.col_offset]
        # One line for the statements, blank lines after it: line numbers stay as they were.
        edits.append((first, last, indent + "; ".join(statements) + "\n"))
    for first, last, text in sorted(edits, reverse=True):
        lines[first : last + 1] = [text] + ["\n"] * (last - first)
    return "".join(lines), kept


def _target(module: str, name: str) -> str | None:
    """Where ``from module import name`` comes from in cryptoffload, or None (stays)."""
    if module in (PREFIX, f"{PREFIX}.asymmetric", f"{PREFIX}.ciphers"):
        sub = _mirror(f"{module}.{name}")  # a submodule: hashes, rsa, algorithms...
        if sub is not None:
            parent = sub.__name__.rpartition(".")[0] or "cryptoffload"
            return parent
        if module == f"{PREFIX}.ciphers":
            mirror = _mirror(module)
            if mirror is not None and hasattr(mirror, name):
                return mirror.__name__
        return None
    mirror = _mirror(module)
    with warnings.catch_warnings():  # names `cryptography` deprecates warn when looked up
        warnings.simplefilter("ignore")
        if mirror is not None and hasattr(mirror, name):
            return mirror.__name__
    return None


def rewrite_tree(root: pathlib.Path, files: list[str]) -> dict[str, list[str]]:
    """Rewrite the test files and helpers under ``root`` in place; the names kept, by file."""
    kept: dict[str, list[str]] = {}
    for rel in [test_path(name) for name in files] + list(HELPERS):
        path = root / rel
        if not path.exists():
            continue
        text, left = rewrite(path.read_text())
        path.write_text(text)
        if left:
            kept[rel] = sorted(set(left))
    return kept


# -- running --------------------------------------------------------------------------------------


def run_pytest(root: pathlib.Path, files: list[str], config: str, out: pathlib.Path) -> dict:
    """Run ``files`` under ``root`` with the plugin in ``config``; the plugin's results."""
    env = dict(os.environ)
    env["CRYPTOFFLOAD_COMPAT_CONFIG"] = config
    env["CRYPTOFFLOAD_COMPAT_OUT"] = str(out)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "pyca_plugin",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::DeprecationWarning",
        "--tb=no",
        "--continue-on-collection-errors",
        "-o",
        "addopts=",
        *[test_path(name) for name in files],
    ]
    subprocess.run(args, cwd=root, env=env, stdout=subprocess.DEVNULL, check=False)
    if not out.exists():
        raise SystemExit(f"pytest ({config}) wrote no results; run it by hand in {root}")
    return json.loads(out.read_text())


def private_reason(nodeid: str) -> str | None:
    """Why a test is left out of the comparison, or None."""
    path, sep, rest = nodeid.partition("::")  # parameter ids may hold "/" too (file names)
    rel = path.rsplit("/", 1)[-1] + sep + rest
    for pattern, reason in EXCLUDED.items():
        if fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, pattern + "[[]*"):
            return reason
    return None


def test_path(name: str) -> str:
    """Where a test file of FILES, MORE or PATHS is in the sdist (relative to its root)."""
    return ELSEWHERE.get(name, f"{TESTS}/{name}.py")


def _file_of(nodeid: str) -> str:
    """A node id's test file as FILES and MORE name it (``test_aes``, ``decrepit/test_rc2``)."""
    path = nodeid.split("::", 1)[0]
    for name, where in ELSEWHERE.items():
        if path == where:
            return name
    return path.removeprefix(f"{TESTS}/").removesuffix(".py")


def summarize(results: dict, files: list[str]) -> dict[str, dict[str, Any]]:
    """Per file: passed/failed/skipped, passing tests cryptoffload counted ops for (and with an
    engine), the tests left out, and collection errors."""
    rows: dict[str, dict[str, Any]] = {
        name: {
            "passed": 0,
            "failed": 0,
            "skipped": 0,
            "unrunnable": 0,
            "reached": 0,
            "exercised": 0,
            "engine": 0,
            "excluded": 0,
        }
        for name in files
    }
    for nodeid, entry in results["tests"].items():
        name = _file_of(nodeid)
        row = rows.get(name)
        if row is None:
            continue
        if private_reason(nodeid):
            row["excluded"] += 1
            continue
        outcome = "skipped" if entry["outcome"] == "xfailed" else entry["outcome"]
        row[outcome] += 1
        if outcome == "unrunnable":
            row.setdefault("missing", []).append(entry["missing"])
        if outcome == "passed" and entry.get("reached"):
            row["reached"] += 1
        if outcome == "passed" and entry.get("ops"):
            row["exercised"] += 1
            if entry.get("engine_ops"):
                row["engine"] += 1
    for nodeid, message in results.get("collect_errors", {}).items():
        name = _file_of(nodeid)
        if name in rows:
            rows[name]["collect_error"] = message
    return rows


def differences(base: dict, other: dict) -> list[tuple[str, str, str, str]]:
    """(test id, outcome under cryptography, outcome here, message) where they differ."""
    out = []
    ids = set(base["tests"]) | set(other["tests"])
    for nodeid in sorted(ids):
        if private_reason(nodeid):
            continue
        a = base["tests"].get(nodeid, {}).get("outcome", "absent")
        b = other["tests"].get(nodeid, {}).get("outcome", "absent")
        if a != b:
            out.append((nodeid, a, b, other["tests"].get(nodeid, {}).get("message", "")))
    return out


def _cell(row: dict[str, Any]) -> str:
    if "collect_error" in row and not (row["passed"] or row["failed"] or row["skipped"]):
        return "collection error"
    cell = f"{row['passed']}/{row['failed']}/{row['skipped']}"
    return cell + (f" +{row['unrunnable']}nv" if row["unrunnable"] else "")


def print_table(files: list[str], base: dict, runs: dict[str, dict]) -> None:
    """One line per file: cryptography, then each configuration with the passing tests that ran
    cryptoffload's code and those it counted ops for."""
    head = f"{'file':<24} {'cryptography':>17}"
    for config in runs:
        head += f" | {config + ' p/f/s':>17} {'reached':>7} {'exercised':>9} {'same':>4}"
    print(head)
    print("-" * len(head))
    totals: dict[str, dict[str, int]] = {}
    for name in files:
        b = base[name]
        line = f"{name:<24} {_cell(b):>17}"
        for config, rows in runs.items():
            r = rows[name]
            same = all(r[k] == b[k] for k in ("passed", "failed", "skipped", "unrunnable"))
            exercised = f"{r['exercised']}" + (f" ({r['engine']})" if config == "engine" else "")
            line += (
                f" | {_cell(r):>17} {r['reached']:>7} {exercised:>9} {'yes' if same else 'NO':>4}"
            )
            t = totals.setdefault(
                config,
                {
                    "passed": 0,
                    "failed": 0,
                    "skipped": 0,
                    "unrunnable": 0,
                    "same": 0,
                    "reached": 0,
                    "exercised": 0,
                },
            )
            for k in ("passed", "failed", "skipped", "unrunnable", "reached", "exercised"):
                t[k] += r[k]
            t["same"] += same
        print(line)
    tb = {k: sum(base[n][k] for n in files) for k in ("passed", "failed", "skipped", "unrunnable")}
    line = f"{'total':<24} {_cell(tb):>17}"
    for t in totals.values():
        same = f"{t['same']}/{len(files)}"
        line += f" | {_cell(t):>17} {t['reached']:>7} {t['exercised']:>9} {same:>4}"
    print(line)


def print_unrunnable(files: list[str], base: dict, runs: dict[str, dict], version: str) -> None:
    """The tests that could not run for want of a vector file, and the files, per test file."""
    missing = {name: sorted(set(base[name].get("missing", []))) for name in files}
    missing = {name: found for name, found in missing.items() if found}
    if not missing:
        return
    vectors = importlib.metadata.version("cryptography-vectors")
    total = sum(base[name]["unrunnable"] for name in files)
    print(
        f"\ncould not run ({total} under cryptography; each configuration: "
        + ", ".join(f"{c} {sum(rows[n]['unrunnable'] for n in files)}" for c, rows in runs.items())
        + f"): cryptography {version}'s tests read vector files that cryptography_vectors"
        f" {vectors} does not have:"
    )
    for name, found in missing.items():
        print(f"  {name} ({base[name]['unrunnable']} tests): {', '.join(found)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", help="comma-separated test files (default: all of issue 15)")
    parser.add_argument("--config", choices=("default", "engine", "both"), default="both")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every difference")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    files = [f.strip().removesuffix(".py") for f in args.files.split(",")] if args.files else []
    known = FILES + MORE + PATHS
    files = files or list(known)
    unknown = [f for f in files if f not in known]
    if unknown:
        parser.error(f"unknown test file(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    configs = list(CONFIGS) if args.config == "both" else [args.config]

    version = installed_version()
    sdist = fetch_sdist("cryptography", f"cryptography-{version}.tar.gz")
    work = pathlib.Path(tempfile.mkdtemp(prefix="pyca-suite-"))
    try:
        original = extract_tests(sdist, work / "cryptography")
        switched = extract_tests(sdist, work / "cryptoffload")
        kept = rewrite_tree(switched, files)
        base_results = run_pytest(original, files, "cryptography", work / "cryptography.json")
        base = summarize(base_results, files)
        runs, diffs = {}, {}
        for config in configs:
            results = run_pytest(switched, files, config, work / f"{config}.json")
            runs[config] = summarize(results, files)
            diffs[config] = differences(base_results, results)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work directory: {work}", file=sys.stderr)

    if args.json:
        json.dump(
            {
                "cryptography": version,
                "files": files,
                "results": {"cryptography": base, **runs},
                "differences": {c: [list(d) for d in v] for c, v in diffs.items()},
                "kept_on_cryptography": kept,
                "excluded": EXCLUDED,
            },
            sys.stdout,
            indent=2,
        )
        print()
        return 1 if differs(runs, diffs) else 0
    print(f"cryptography {version}: pyca's tests, passed/failed/skipped per file. Of the passing")
    print("tests, 'reached': those that ran cryptoffload's own code (the rest used only names it")
    print("takes from `cryptography` as they are, such as padding or the vector loaders);")
    print("'exercised': those it counted operations for (engine: by the engine). +Nnv: N tests")
    print("could not run, a vector file they read missing from cryptography_vectors.")
    print()
    print_table(files, base, runs)
    print_unrunnable(files, base, runs, version)
    if kept:
        print("\nnames left on cryptography (cryptoffload has no counterpart):")
        for rel, names in kept.items():
            print(f"  {rel}: {', '.join(n.removeprefix(PREFIX + '.') for n in names)}")
    print(f"\nleft out of the comparison ({len(PRIVATE)}: cryptography's private internals):")
    for pattern, reason in PRIVATE.items():
        print(f"  {pattern}: {reason}")
    print(f"\nleft out of the comparison ({len(WARNS_DEPRECATION)}: {_NOT_DEPRECATED}):")
    for pattern in WARNS_DEPRECATION:
        print(f"  {pattern}")
    for config, rows in runs.items():
        for name, row in rows.items():
            if "collect_error" in row:
                print(f"\n{config}: {name} does not import: {row['collect_error']}")
    for config, found in diffs.items():
        if not found:
            continue
        print(f"\n{config}: {len(found)} tests differ from cryptography")
        for nodeid, a, b, message in found if args.verbose else found[:20]:
            print(f"  {nodeid}: {a} -> {b}  {message[:140]}")
        if not args.verbose and len(found) > 20:
            print(f"  ... {len(found) - 20} more (-v lists them all)")
    return 1 if differs(runs, diffs) else 0


def differs(runs: dict[str, dict], diffs: dict[str, list]) -> bool:
    """Whether any configuration differs from `cryptography` (a test's outcome, or a file that
    does not import): the run's exit status is 1 then."""
    broken = any("collect_error" in row for rows in runs.values() for row in rows.values())
    return broken or any(diffs.values())


if __name__ == "__main__":
    sys.exit(main())
