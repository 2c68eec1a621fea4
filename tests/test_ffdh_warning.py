"""cryptography 50 deprecates FFDH; cryptoffload uses it on purpose and must not pass the warning
on to its users (importing `dh`, DH keys, key loading, the self-test), nor hide any other."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
from cryptography.utils import CryptographyDeprecationWarning

from cryptoffload import dh

#: Every warning shown (no deduplication), DeprecationWarning an error, as the issue ran it.
STRICT = [sys.executable, "-W", "always", "-W", "error::DeprecationWarning"]

DH_ROUND_TRIP = """
from cryptoffload import dh, serialization as s
key = dh.generate_private_key("ffdhe2048")
peer = dh.generate_private_key("ffdhe2048")
pem = key.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption())
der = key.private_bytes(s.Encoding.DER, s.PrivateFormat.PKCS8, s.NoEncryption())
spki = s.PublicFormat.SubjectPublicKeyInfo
loaded = [
    s.load_pem_private_key(pem, None),
    s.load_der_private_key(der, None),
    s.load_pem_public_key(peer.public_key().public_bytes(s.Encoding.PEM, spki)),
    s.load_der_public_key(peer.public_key().public_bytes(s.Encoding.DER, spki)),
]
wire = dh.DHPublicKey.from_public_value("ffdhe2048", peer.public_key().public_value())
assert loaded[0].exchange(loaded[2]) == loaded[1].exchange(wire) == peer.exchange(key.public_key())
print("ok")
"""


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STRICT, *argv], capture_output=True, text=True, timeout=300)


def test_selftest_on_software_prints_no_ffdh_deprecation_warning():
    proc = _run("-m", "cryptoffload", "selftest", "--engine", "software")
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr and "FFDH" not in proc.stderr + proc.stdout
    assert "all passed" in proc.stdout


def test_dh_import_key_load_and_exchange_print_no_ffdh_deprecation_warning():
    proc = _run("-c", DH_ROUND_TRIP)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n" and proc.stderr == ""


def test_dh_import_under_error_on_every_warning_succeeds():
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", "import cryptoffload.dh, cryptoffload.serialization"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_quiet_ffdh_warning_hides_that_warning_and_no_other():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with dh.quiet_ffdh_warning():
            warnings.warn(
                "Diffie-Hellman over finite fields (FFDH) is deprecated and support will be "
                "removed in a future release.",
                CryptographyDeprecationWarning,
                stacklevel=1,
            )
            warnings.warn("another deprecation", CryptographyDeprecationWarning, stacklevel=1)
            warnings.warn("Diffie-Hellman over finite fields (FFDH)", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == [
        "another deprecation",
        "Diffie-Hellman over finite fields (FFDH)",
    ]


def test_users_own_use_of_cryptographys_dh_still_warns():
    # cryptoffload confines the warning to its own calls; it sets no process-wide filter.
    with pytest.warns(CryptographyDeprecationWarning, match="FFDH"):
        from cryptography.hazmat.primitives.asymmetric.dh import DHPublicNumbers  # noqa: F401
