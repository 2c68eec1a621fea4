"""The virtio-crypto driver unloaded under the AF_ALG engine, in the rig's guest (rig/run)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher as RefCipher

from cryptoffload import Policy, Provider
from cryptoffload.ciphers import Cipher, algorithms, modes

MODULE = "virtio_crypto"
DRIVER = "virtio_crypto_aes_cbc"
KEY, IV = bytes(range(16)), bytes(range(16, 32))


def _why_not() -> str | None:
    try:
        socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET).close()
    except (OSError, AttributeError) as exc:
        return f"no AF_ALG here ({exc}); run it in the guest: rig/run python3 -m pytest ..."
    if os.geteuid() != 0 or shutil.which("busybox") is None:
        return "needs root and busybox (the rig's guest has both)"
    with open("/proc/modules", encoding="ascii") as f:
        if not any(line.split()[0] == MODULE for line in f):
            return f"module {MODULE} is not loaded"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def modprobe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["busybox", "modprobe", *args], capture_output=True, text=True)


def loaded() -> bool:
    with open("/proc/modules", encoding="ascii") as f:
        return any(line.split()[0] == MODULE for line in f)


@pytest.fixture
def reloaded_after() -> Iterator[None]:
    """The module is loaded again when the test ends, for the guest tests after it."""
    yield
    if not loaded():
        modprobe(MODULE)


def right(provider: Provider, n: int = 10) -> bool:
    """``n`` CBC encryptions through ``provider`` give `cryptography`'s answers."""
    ok = True
    for i in range(n):
        data = os.urandom(16 * (i + 1))
        ctx = Cipher(algorithms.AES(KEY), modes.CBC(IV), provider=provider).encryptor()
        want = RefCipher(algorithms.AES(KEY), modes.CBC(IV)).encryptor().update(data)
        ok &= ctx.update(data) + ctx.finalize() == want
    return ok


def cell(provider: Provider, engine: str) -> dict:
    return provider.counters.snapshot().get(engine, {}).get("aes-128-cbc", {})


def test_the_driver_stays_while_the_engine_holds_it_and_unloaded_leaves_software(reloaded_after):
    name = f"afalg:{DRIVER}"
    provider = Provider([name], policy=Policy(min_size={"*": 0}))
    assert not provider.unavailable
    assert right(provider)
    # The engine's transforms hold the module: the kernel refuses to unload it mid-run.
    assert modprobe("-r", MODULE).returncode != 0 and loaded()
    assert right(provider)
    assert cell(provider, name)["ops"] == 20 and cell(provider, name)["faults"] == 0
    provider.close()  # the transforms go: now it can go too
    modprobe("-r", MODULE)
    assert not loaded()
    assert right(provider)  # the closed engine cannot bind the driver again: software answers
    assert cell(provider, name)["ops"] == 20 and cell(provider, name)["declined"]
    assert cell(provider, "software")["ops"] == 10
    later = Provider([name], policy=Policy(min_size={"*": 0}))
    assert later.unavailable == {name: f"driver {DRIVER} not found"}
    assert right(later)
