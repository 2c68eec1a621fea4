"""Device secrets of the CAAM model: the master key, the secure keys SK makes, black key covers.

What the public sources give (Linux blob_gen.c and caam-blob.h, the posted "protected key"
series, error.c): every device holds a master key software cannot read (the OTPMK fused at
manufacture); RNG4's secure-key generation (OPERATION RNG AAI SK) makes the job descriptor key
encryption key (JDKEK), the trusted descriptor KEK (TDKEK) and the trusted descriptor signing key
(TDSK) and sets RDSTA.SKVN; black keys are keys covered by the JDKEK, AES-ECB (the key padded to
16 bytes) or AES-CCM (the key padded to 8 bytes, plus a 6-byte nonce and a 6-byte ICV); a blob or
black key before the secure keys exist is DECO error 0x24.

The model's choices (the hardware's key derivation and cover formats are not public):
- The master key is SHAKE-256 of a label and the model's ``seed`` (so one seed is one device and
  tests repeat), or 32 random bytes when there is no seed. A reset keeps it (it is fused).
- JDKEK, TDKEK and TDSK are 32 bytes each, drawn from RNG4 state handle 0 by the SK operation; a
  reset (MCFGR.SWRESET) forgets them, so black keys do not survive a reset, black blobs do.
- ECB black key: AES-256-ECB under the JDKEK of the key zero-padded to a multiple of 16 bytes.
- CCM black key: nonce (6 bytes) || AES-256-CCM ciphertext of the key zero-padded to a multiple of
  8 bytes || ICV (6 bytes), under the JDKEK; the CCM nonce is those 6 bytes followed by 7 zero
  bytes (``cryptography``'s CCM takes 7 to 13 nonce bytes). A wrong ICV is CCB AES ICV (0x1A).
- The blob key encryption key (BKEK) is HMAC-SHA256(master key, label || blob kind || length of
  the key modifier || key modifier): the kind (red data or black key) is bound in, so a black
  blob never decapsulates as red data and the other way round.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESCCM

from cryptoffload.caam import status

__all__ = [
    "CCM_ICV_BYTES",
    "CCM_NONCE_BYTES",
    "CoverError",
    "DeviceKeys",
    "KeyFault",
    "KeysNotLoaded",
    "black_size",
    "load_black_key",
    "store_black_key",
]

MASTER_KEY_BYTES = 32
SECURE_KEY_BYTES = 32
ECB_ALIGN = 16
CCM_ALIGN = 8
CCM_NONCE_BYTES = 6
CCM_ICV_BYTES = 6
_CCM_NONCE_PAD = bytes(7)
_MASTER_LABEL = b"cryptoffload caam model master key|"
_BKEK_LABEL = b"cryptoffload caam model BKEK|"
BLOB_KINDS = {"red": 0, "black": 1}


class KeysNotLoaded(Exception):
    """A blob or black key before secure-key generation: DECO 0x24 on the hardware."""


class CoverError(Exception):
    """A CCM black key whose ICV does not check (tampered, or covered by another JDKEK)."""


def black_size(length: int, *, ccm: bool) -> int:
    """Bytes of the black form of a ``length``-byte key: ECB pads to 16, CCM to 8 plus 12."""
    if ccm:
        return -(-length // CCM_ALIGN) * CCM_ALIGN + CCM_NONCE_BYTES + CCM_ICV_BYTES
    return -(-length // ECB_ALIGN) * ECB_ALIGN


def _pad(data: bytes, align: int) -> bytes:
    return data + bytes(-len(data) % align)


class DeviceKeys:
    """The secrets of one device: its master key, and the secure keys once SK has made them."""

    def __init__(self, seed: bytes | None = None) -> None:
        if seed is None:
            self._master = os.urandom(MASTER_KEY_BYTES)
        else:
            self._master = hashlib.shake_256(_MASTER_LABEL + bytes(seed)).digest(MASTER_KEY_BYTES)
        self._jdkek: bytes | None = None
        self._tdkek: bytes | None = None
        self._tdsk: bytes | None = None

    def __repr__(self) -> str:  # never shows a key
        return f"<DeviceKeys secure_keys_valid={self.secure_keys_valid}>"

    @property
    def secure_keys_valid(self) -> bool:
        """Whether SK has made the JDKEK, TDKEK and TDSK since the last reset (RDSTA.SKVN)."""
        return self._jdkek is not None

    def generate_secure_keys(self, random: Callable[[int], bytes]) -> bool:
        """Make the JDKEK, TDKEK and TDSK from ``random``; False when they already exist."""
        if self.secure_keys_valid:
            return False
        self._jdkek = random(SECURE_KEY_BYTES)
        self._tdkek = random(SECURE_KEY_BYTES)
        self._tdsk = random(SECURE_KEY_BYTES)
        return True

    def reset(self) -> None:
        """Forget the secure keys (a reset); the master key is fused and stays."""
        self._jdkek = self._tdkek = self._tdsk = None

    def _kek(self) -> bytes:
        if self._jdkek is None:
            raise KeysNotLoaded("the JDKEK is not loaded: run secure-key generation first")
        return self._jdkek

    def blob_key_encryption_key(self, modifier: bytes, kind: str) -> bytes:
        """The BKEK for a blob of ``kind`` ("red" or "black") under key modifier ``modifier``."""
        info = _BKEK_LABEL + bytes([BLOB_KINDS[kind], len(modifier)]) + bytes(modifier)
        return hmac.new(self._master, info, hashlib.sha256).digest()

    def cover(self, key: bytes, *, ccm: bool, nonce: bytes = b"") -> bytes:
        """The black form of ``key`` under the JDKEK (CCM needs a 6-byte ``nonce``)."""
        kek = self._kek()
        if not ccm:
            enc = Cipher(algorithms.AES(kek), modes.ECB()).encryptor()
            return enc.update(_pad(bytes(key), ECB_ALIGN)) + enc.finalize()
        if len(nonce) != CCM_NONCE_BYTES:
            raise ValueError(f"a CCM black key takes a {CCM_NONCE_BYTES}-byte nonce")
        sealed = AESCCM(kek, tag_length=CCM_ICV_BYTES).encrypt(
            bytes(nonce) + _CCM_NONCE_PAD, _pad(bytes(key), CCM_ALIGN), None
        )
        return bytes(nonce) + sealed

    def uncover(self, black: bytes, length: int, *, ccm: bool) -> bytes:
        """The ``length``-byte key inside ``black`` (``black_size(length)`` bytes); CoverError
        when a CCM ICV does not check. An ECB black key cannot be checked: a wrong one gives a
        wrong key, as on the hardware."""
        kek = self._kek()
        black = bytes(black)
        if len(black) != black_size(length, ccm=ccm):
            raise ValueError(f"a {length}-byte black key is {black_size(length, ccm=ccm)} bytes")
        if not ccm:
            dec = Cipher(algorithms.AES(kek), modes.ECB()).decryptor()
            return (dec.update(black) + dec.finalize())[:length]
        nonce, sealed = black[:CCM_NONCE_BYTES], black[CCM_NONCE_BYTES:]
        try:
            plain = AESCCM(kek, tag_length=CCM_ICV_BYTES).decrypt(
                nonce + _CCM_NONCE_PAD, sealed, None
            )
        except InvalidTag:
            raise CoverError("black key ICV check failed") from None
        return plain[:length]


class KeyFault(Exception):
    """A KEY or FIFO STORE of a black key that fails: ``status`` is the job's status word."""

    def __init__(self, word: int) -> None:
        super().__init__(f"status 0x{word:08x}")
        self.status = word


def load_black_key(keys: DeviceKeys, black: bytes, length: int, *, ccm: bool, index: int) -> bytes:
    """What a KEY command with ENC (and EKT for CCM) at ``index`` puts in the key register.

    KeyFault: DECO 0x24 before the secure keys exist, CCB AES ICV (0x1A) when a CCM black key's
    ICV does not check.
    """
    try:
        return keys.uncover(black, length, ccm=ccm)
    except KeysNotLoaded:
        raise KeyFault(status.deco(status.DECO_KEYS_NOT_LOADED, index)) from None
    except CoverError:
        raise KeyFault(status.ccb(status.CHA_AES, status.ERR_ICVCHK, index)) from None


def store_black_key(
    keys: DeviceKeys,
    key: bytes,
    *,
    ccm: bool,
    draw: Callable[[int], bytes] | None,
    index: int,
) -> bytes:
    """What a FIFO STORE of a key register (type KEY_KEK, or KEY_CCM_JKEK for CCM) writes: the
    key's black form, never the key. ``draw`` gives the CCM nonce from RNG4 state handle 0
    (None when it is not instantiated: CCB RNG 0x54). KeyFault: DECO 0x24 before SK."""
    if not keys.secure_keys_valid:
        raise KeyFault(status.deco(status.DECO_KEYS_NOT_LOADED, index))
    nonce = b""
    if ccm:
        if draw is None:
            raise KeyFault(status.ccb(status.CHA_RNG, status.ERR_RNG_NOT_INSTANTIATED, index))
        nonce = draw(CCM_NONCE_BYTES)
    return keys.cover(key, ccm=ccm, nonce=nonce)
