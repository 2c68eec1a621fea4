"""Whether each discovered kind's device may be on this machine, decided without importing its
engine, and the words its probe gives where it certainly is not."""

from __future__ import annotations

import os

#: `typing` is for type checkers only (its import loads re, a start-up cost).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The kernel options AF_ALG needs (afalg's probe names them when the kernel refuses a socket).
AFALG_KERNEL_OPTIONS = (
    "CONFIG_CRYPTO_USER_API_SKCIPHER, CONFIG_CRYPTO_USER_API_AEAD, "
    "CONFIG_CRYPTO_USER_API_HASH and CONFIG_CRYPTO_USER_API_RNG"
)
#: cryptodev's device node, and what makes it appear.
CRYPTODEV_DEVICE = "/dev/crypto"
CRYPTODEV_HOW_TO_LOAD = (
    "load the cryptodev module (modprobe cryptodev; it is cryptodev-linux, built against this "
    "kernel)"
)
#: Where a SEC/CAAM block is described.
CAAM_DEVICE_TREE = "/proc/device-tree"


def afalg_refused() -> str | None:
    """Why this machine has no AF_ALG sockets (afalg's probe's first check), or None."""
    import _socket  # socket's C part: the socket module's import costs more than this check

    family = getattr(_socket, "AF_ALG", None)
    if family is None:
        return "this platform has no AF_ALG sockets (Linux only)"
    try:
        _socket.socket(family, _socket.SOCK_SEQPACKET).close()
    except OSError as exc:
        why = exc.strerror
        return f"the kernel refuses AF_ALG sockets ({why}); it needs {AFALG_KERNEL_OPTIONS}"
    return None


def cryptodev_absent() -> str | None:
    """Why there is certainly no cryptodev device (its node does not exist), or None."""
    if os.path.exists(CRYPTODEV_DEVICE):
        return None
    return f"{CRYPTODEV_DEVICE} does not exist: {CRYPTODEV_HOW_TO_LOAD}"


def caam_no_device_tree(tree: str = CAAM_DEVICE_TREE) -> str | None:
    """Why no SEC/CAAM block can be found in ``tree`` (it does not exist), or None."""
    if os.path.exists(tree):
        return None
    return caam_no_block(tree)


def caam_no_block(tree: object) -> str:
    """The caam probe's reason where ``tree`` describes no SEC/CAAM block."""
    return (
        f"no SEC/CAAM block on this machine (no fsl,sec-v4.0 node under {tree}); on a board "
        "give base=0x... (and unbind its job ring from caam_jr)"
    )


class AbsentEngine:
    """What discovery gives for a kind whose device is certainly not here: an engine whose probe
    says so in the kind's own words, built without importing the kind's module."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason

    def __repr__(self) -> str:
        return f"<AbsentEngine {self.name}: {self.reason}>"

    def probe(self) -> Any:
        from cryptoffload.engines.base import Capabilities

        return Capabilities(False, self.reason)

    def run(self, op: object) -> Any:
        from cryptoffload.errors import Unavailable

        raise Unavailable("no-device", self.reason)

    def close(self) -> None:
        """Nothing to release: nothing was opened."""
