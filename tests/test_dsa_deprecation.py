"""cryptography 51 deprecates DSA: reading a DSA name of its ``dsa`` module warns, and so does
loading a DSA key; importing the module does not. The mirror warns exactly there (the same
warnings, step by step, as `cryptography` itself), never at import, and nothing with 50."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from cryptography.hazmat.primitives.asymmetric import dsa as c_dsa

from cryptoffload._deprecations import deprecated_in

#: Whether the installed `cryptography` deprecates DSA (51 on).
DSA_DEPRECATED = bool(deprecated_in(c_dsa))

#: Steps run in one fresh interpreter, each one's warnings recorded apart. @DSA@ is the module
#: under test, @SER@ its serialization module.
STEPS = {
    "import": "import @DSA@ as dsa; import @SER@ as ser",
    "attribute": "dsa.DSAPrivateKey",
    "from-import": "from @DSA@ import DSAPublicNumbers, generate_private_key",
    "generate": "key = generate_private_key(1024)",
    "sign": "signature = key.sign(b'm', HASH)",
    "serialize": (
        "pem = key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption())"
    ),
    "load": "loaded = ser.load_pem_private_key(pem, None)",
    "verify": "loaded.public_key().verify(signature, b'm', HASH)",
    "isinstance": "isinstance(loaded, dsa.DSAPrivateKey)",
}

SCRIPT = """
import json, warnings
from cryptography.hazmat.primitives.hashes import SHA256
HASH = SHA256()
seen = {}
for name, code in STEPS.items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(code)
    seen[name] = [(w.category.__name__, str(w.message)) for w in caught]
print(json.dumps(seen))
"""

MODULES = {
    "cryptography": (
        "cryptography.hazmat.primitives.asymmetric.dsa",
        "cryptography.hazmat.primitives.serialization",
    ),
    "cryptoffload.asymmetric": ("cryptoffload.asymmetric.dsa", "cryptoffload.serialization"),
    "cryptoffload": ("cryptoffload.dsa", "cryptoffload.serialization"),
}


def warnings_per_step(dsa_module: str, ser_module: str, *prefix: str) -> dict[str, list]:
    steps = {
        name: code.replace("@DSA@", dsa_module).replace("@SER@", ser_module)
        for name, code in STEPS.items()
    }
    # The steps' code is plain text: module names replaced, then read back by the script.
    script = f"STEPS = {json.dumps(steps)!s}\n" + textwrap.dedent(SCRIPT)
    proc = subprocess.run(
        [sys.executable, *prefix, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def cryptographys() -> dict[str, list]:
    return warnings_per_step(*MODULES["cryptography"])


@pytest.mark.parametrize("mirror", ["cryptoffload.asymmetric", "cryptoffload"])
def test_the_mirror_warns_at_each_step_as_cryptography_does(cryptographys, mirror):
    assert warnings_per_step(*MODULES[mirror]) == cryptographys


def test_cryptography_warns_where_this_release_deprecates_dsa(cryptographys):
    # Guards the comparison above against passing with no warning on either side.
    expected = 1 if DSA_DEPRECATED else 0
    assert len(cryptographys["attribute"]) == expected
    assert len(cryptographys["load"]) == expected
    assert cryptographys["import"] == []


def test_a_star_import_gives_the_names_each_deprecated_one_with_its_warning():
    # Here the mirror parts from `cryptography` 51, whose deprecation wrapper makes
    # ``from ...dsa import *`` import nothing at all (its module has no __all__ and the wrapper's
    # namespace is empty): the mirror's gives every name, each read warning as a read does.
    script = (
        "import warnings, json\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from cryptoffload.asymmetric.dsa import *\n"
        "print(json.dumps([len(caught), 'DSAPrivateKey' in dir(), 'generate_parameters' in dir()]))"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [11 if DSA_DEPRECATED else 0, True, True]


def test_importing_the_api_warns_nothing_even_as_an_error():
    proc = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            "-c",
            "import cryptoffload.serialization, cryptoffload.asymmetric, cryptoffload.dsa, "
            "cryptoffload.asymmetric.dsa, cryptoffload.serialization.ssh",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == ""


APPLICATION = """
import warnings
warnings.simplefilter("always")
from cryptography.hazmat.primitives.asymmetric import dsa  # paramiko's import
print("imported", dsa.__name__, flush=True)
dsa.DSAPrivateKey
print("read", flush=True)
"""


def test_under_run_an_application_that_imports_dsa_sees_cryptographys_warnings(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(APPLICATION)
    plain = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60
    )
    under_run = subprocess.run(
        [sys.executable, "-m", "cryptoffload", "run", "--engines", "software", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plain.returncode == under_run.returncode == 0, under_run.stderr
    assert under_run.stdout.splitlines()[0] == "imported cryptoffload.asymmetric.dsa"
    shown = [line for line in under_run.stderr.splitlines() if "Warning" in line]
    expected = [line for line in plain.stderr.splitlines() if "Warning" in line]
    assert len(shown) == len(expected) == (1 if DSA_DEPRECATED else 0)
    # The warning points at the application's line, as `cryptography`'s does.
    assert all(line.startswith(str(script)) for line in shown)
