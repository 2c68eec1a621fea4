"""A SoftHSM token in a temporary directory, for the tests that run through ``pkcs11:``."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

#: Where Debian's softhsm2 puts the module (and other distributions' spellings).
MODULE_PATHS = (
    "/usr/lib/softhsm/libsofthsm2.so",
    "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
    "/usr/lib64/pkcs11/libsofthsm2.so",
    "/usr/local/lib/softhsm/libsofthsm2.so",
)
LABEL = "cryptoffload-test"
OTHER_LABEL = "cryptoffload-other"
PIN = "246810"
PIN_ENV = "CRYPTOFFLOAD_TEST_PIN"


@dataclass(frozen=True)
class SoftHsm:
    """An initialised token: its module, label, directory and the spec that reaches it."""

    module: str
    label: str
    directory: str

    @property
    def spec(self) -> str:
        return f"pkcs11:module={self.module},token={self.label},pin-env={PIN_ENV}"

    @property
    def other_spec(self) -> str:
        """The spec of the second token of the same module."""
        return f"pkcs11:module={self.module},token={OTHER_LABEL},pin-env={PIN_ENV}"


def module_path() -> str | None:
    """The SoftHSM module here, or None."""
    return next((p for p in MODULE_PATHS if os.path.exists(p)), None)


def why_missing() -> str | None:
    """Why SoftHSM cannot be used here (None when it can)."""
    if module_path() is None:
        return "SoftHSM is not installed (apt-get install softhsm2)"
    if shutil.which("softhsm2-util") is None:
        return "softhsm2-util is not on PATH"
    return None


def start() -> SoftHsm:
    """A fresh token under a new temporary directory; SOFTHSM2_CONF and the PIN variable are
    set in this process's environment (the module reads the config at C_Initialize)."""
    module = module_path()
    assert module is not None
    directory = tempfile.mkdtemp(prefix="softhsm-")
    os.mkdir(os.path.join(directory, "tokens"))
    conf = os.path.join(directory, "softhsm2.conf")
    with open(conf, "w") as f:
        f.write(
            f"directories.tokendir = {directory}/tokens\nobjectstore.backend = file\n"
            "log.level = ERROR\n"
        )
    os.environ["SOFTHSM2_CONF"] = conf
    os.environ[PIN_ENV] = PIN
    for label in (LABEL, OTHER_LABEL):  # a second token, for keys that belong to another
        subprocess.run(
            ["softhsm2-util", "--init-token", "--free", "--label", label, "--pin", PIN,
             "--so-pin", "13579111"],
            check=True, capture_output=True, env=os.environ,
        )  # fmt: skip
    return SoftHsm(module, LABEL, directory)


def stop(token: SoftHsm) -> None:
    shutil.rmtree(token.directory, ignore_errors=True)


_shared: list[SoftHsm] = []


def shared() -> SoftHsm:
    """This process's token, started on first use and removed when the process exits (the
    tests' session fixture and the fault campaign share it)."""
    if not _shared:
        _shared.append(start())
        atexit.register(stop, _shared[0])
    token = _shared[0]
    os.environ["SOFTHSM2_CONF"] = os.path.join(token.directory, "softhsm2.conf")
    os.environ[PIN_ENV] = PIN
    return token
