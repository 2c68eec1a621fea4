"""`cryptography`'s ``serialization.ssh`` path: its names, with the loaders giving cryptoffload's
keys (whose signatures an ``SSHCertificateBuilder`` then makes through the provider)."""

from cryptography.hazmat.primitives.serialization import ssh as _ssh

from cryptoffload.serialization import (
    load_ssh_private_key,
    load_ssh_public_identity,
    load_ssh_public_key,
)
from cryptoffload.serialization._mirror import fallback, public_names

_OURS = {
    "load_ssh_private_key": load_ssh_private_key,
    "load_ssh_public_identity": load_ssh_public_identity,
    "load_ssh_public_key": load_ssh_public_key,
}
globals().update({**public_names(_ssh), **_OURS})
__all__ = sorted(public_names(_ssh))

__getattr__ = fallback(_ssh)
