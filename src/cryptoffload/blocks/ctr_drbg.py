"""Deterministic SP 800-90A Rev.1 CTR_DRBG (AES-256), with or without the derivation function."""

from __future__ import annotations

import threading

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = [
    "BLOCK_LEN",
    "DEFAULT_RESEED_INTERVAL",
    "KEY_LEN",
    "MAX_REQUEST_BYTES",
    "MAX_RESEED_INTERVAL",
    "MIN_ENTROPY_BYTES",
    "SEED_LEN",
    "CtrDrbg",
    "ReseedRequiredError",
]

KEY_LEN = 32
BLOCK_LEN = 16
SEED_LEN = KEY_LEN + BLOCK_LEN
# 2**19 bits, the largest request SP 800-90A Table 3 allows for CTR_DRBG with AES.
MAX_REQUEST_BYTES = 1 << 16
# Security strength 256 bits.
MIN_ENTROPY_BYTES = 32
DEFAULT_RESEED_INTERVAL = 1 << 20
MAX_RESEED_INTERVAL = 1 << 48
# Block_Cipher_df encodes the input length in a 32-bit field.
_MAX_DF_INPUT_BYTES = 0xFFFFFFFF

_DF_KEY = bytes(range(KEY_LEN))
_ZERO_BLOCK = bytes(BLOCK_LEN)
_ZERO_SEED = bytes(SEED_LEN)
_ZEROS = bytes(MAX_REQUEST_BYTES + SEED_LEN)
_MOD128 = 1 << 128


class ReseedRequiredError(RuntimeError):
    """Raised by generate when reseed_interval requests have been served since the last seed."""


def _check_bytes(name: str, value: object) -> bytes:
    # bytes(int) would silently build a zero buffer, so only real byte strings are accepted.
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TypeError(f"{name} must be bytes-like, not {type(value).__name__}")
    return bytes(value)


def _xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(len(a), "big")


def _ctr_keystream(key: bytes | bytearray, v: bytes | bytearray, length: int) -> bytes:
    """E(key, V+1) || E(key, V+2) || ... truncated to length bytes (counter mod 2**128)."""
    start = ((int.from_bytes(v, "big") + 1) % _MOD128).to_bytes(BLOCK_LEN, "big")
    encryptor = Cipher(algorithms.AES(key), modes.CTR(start)).encryptor()
    return encryptor.update(memoryview(_ZEROS)[:length]) + encryptor.finalize()


def _bcc(key: bytes, data: bytes) -> bytes:
    # BCC is CBC-MAC with a zero IV: the last block of a CBC encryption.
    encryptor = Cipher(algorithms.AES(key), modes.CBC(_ZERO_BLOCK)).encryptor()
    return (encryptor.update(data) + encryptor.finalize())[-BLOCK_LEN:]


def _block_cipher_df(data: bytes, out_len: int = SEED_LEN) -> bytes:
    """Block_Cipher_df of SP 800-90A Rev.1 section 10.3.2."""
    if len(data) > _MAX_DF_INPUT_BYTES:
        raise ValueError("derivation function input exceeds 2**32 - 1 bytes")
    s = len(data).to_bytes(4, "big") + out_len.to_bytes(4, "big") + data + b"\x80"
    s += bytes(-len(s) % BLOCK_LEN)
    temp = b""
    i = 0
    while len(temp) < KEY_LEN + BLOCK_LEN:
        iv = i.to_bytes(4, "big") + bytes(BLOCK_LEN - 4)
        temp += _bcc(_DF_KEY, iv + s)
        i += 1
    key, x = temp[:KEY_LEN], temp[KEY_LEN : KEY_LEN + BLOCK_LEN]
    n_blocks = -(-out_len // BLOCK_LEN)
    # X_{j+1} = E(K, X_j) chained from X is CBC encryption of zeros with IV X.
    encryptor = Cipher(algorithms.AES(key), modes.CBC(x)).encryptor()
    out = encryptor.update(bytes(n_blocks * BLOCK_LEN)) + encryptor.finalize()
    return out[:out_len]


class CtrDrbg:
    """CTR_DRBG with AES-256 (SP 800-90A Rev.1 section 10.2), no prediction resistance.

    The instance is purely deterministic: the caller supplies every entropy input.
    With ``use_df=True`` (the default) seed material goes through Block_Cipher_df, so
    entropy may be any length of at least 32 bytes and the nonce and personalization
    string are concatenated to it; SP 800-90A expects a nonce of at least 16 bytes,
    or equivalent extra entropy, which the caller is responsible for.  With
    ``use_df=False`` the entropy input must be exactly 48 bytes of full entropy, the
    personalization string and additional inputs are at most 48 bytes (zero padded
    and XORed in), and no nonce is accepted.

    ``generate`` serves one SP 800-90A request of at most ``MAX_REQUEST_BYTES``
    (65536) bytes; ``random_bytes`` splits larger requests into several requests.
    After ``reseed_interval`` requests ``generate`` raises ``ReseedRequiredError``
    until ``reseed`` is called.  Instances are thread-safe and refuse to be copied
    or pickled, since a duplicated state would repeat its output.
    """

    __slots__ = ("_key", "_lock", "_reseed_counter", "_reseed_interval", "_use_df", "_v")

    def __init__(
        self,
        entropy: bytes,
        nonce: bytes = b"",
        personalization: bytes = b"",
        use_df: bool = True,
        *,
        reseed_interval: int = DEFAULT_RESEED_INTERVAL,
    ) -> None:
        if isinstance(reseed_interval, bool) or not isinstance(reseed_interval, int):
            raise TypeError("reseed_interval must be an int")
        if not 1 <= reseed_interval <= MAX_RESEED_INTERVAL:
            raise ValueError(f"reseed_interval must be in 1..2**48, got {reseed_interval}")
        self._use_df = bool(use_df)
        self._reseed_interval = reseed_interval
        self._lock = threading.Lock()
        self._key: bytearray | None = bytearray(KEY_LEN)
        self._v: bytearray | None = bytearray(BLOCK_LEN)
        self._reseed_counter = 0

        entropy = _check_bytes("entropy", entropy)
        nonce = _check_bytes("nonce", nonce)
        personalization = _check_bytes("personalization", personalization)
        if self._use_df:
            self._check_df_entropy(entropy)
            seed_material = _block_cipher_df(entropy + nonce + personalization)
        else:
            self._check_nodf_entropy(entropy)
            if nonce:
                raise ValueError("no-df CTR_DRBG takes no nonce")
            seed_material = _xor(entropy, self._pad_nodf("personalization", personalization))
        self._update(seed_material)
        self._reseed_counter = 1

    @property
    def use_df(self) -> bool:
        """Whether seed material and additional input go through Block_Cipher_df."""
        return self._use_df

    @property
    def reseed_counter(self) -> int:
        """Number of generate requests since the last (re)seed, plus one (SP 800-90A)."""
        return self._reseed_counter

    @property
    def reseed_interval(self) -> int:
        """Maximum number of generate requests between reseeds."""
        return self._reseed_interval

    @property
    def needs_reseed(self) -> bool:
        """True when the next generate would fail with ReseedRequiredError."""
        return self._reseed_counter > self._reseed_interval

    @property
    def zeroized(self) -> bool:
        """True once zeroize() has destroyed the internal state."""
        return self._key is None

    def reseed(self, entropy: bytes, additional: bytes = b"") -> None:
        """Mix fresh entropy (and optional additional input) into the state; resets the counter."""
        entropy = _check_bytes("entropy", entropy)
        additional = _check_bytes("additional", additional)
        if self._use_df:
            self._check_df_entropy(entropy)
            seed_material = _block_cipher_df(entropy + additional)
        else:
            self._check_nodf_entropy(entropy)
            seed_material = _xor(entropy, self._pad_nodf("additional", additional))
        with self._lock:
            self._require_state()
            self._update(seed_material)
            self._reseed_counter = 1

    def generate(self, n: int, additional: bytes = b"") -> bytes:
        """Return n pseudorandom bytes from one request; 0 <= n <= MAX_REQUEST_BYTES.

        A request of 0 bytes still advances the state and the reseed counter, as the
        standard's generate function does.
        """
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError("n must be an int")
        if not 0 <= n <= MAX_REQUEST_BYTES:
            raise ValueError(
                f"a single request must be 0..{MAX_REQUEST_BYTES} bytes, got {n}; "
                "use random_bytes() for larger amounts"
            )
        additional = self._prepare_additional(additional)
        with self._lock:
            self._require_state()
            if self.needs_reseed:
                raise ReseedRequiredError("reseed interval reached; call reseed() first")
            return self._generate_locked(n, additional)

    def random_bytes(self, n: int) -> bytes:
        """Return n bytes of any size, as consecutive generate requests of at most 65536 bytes.

        Each chunk counts as one request towards the reseed interval.  If the whole
        amount cannot be produced before the interval runs out, ReseedRequiredError is
        raised before any state changes.  ``random_bytes(0)`` returns b"" without a
        request.
        """
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError("n must be an int")
        if n < 0:
            raise ValueError(f"n must be non-negative, got {n}")
        if n == 0:
            return b""
        requests = -(-n // MAX_REQUEST_BYTES)
        with self._lock:
            self._require_state()
            if self._reseed_counter + requests - 1 > self._reseed_interval:
                raise ReseedRequiredError(
                    f"{requests} requests needed but the reseed interval allows fewer"
                )
            chunks = []
            remaining = n
            while remaining:
                size = min(remaining, MAX_REQUEST_BYTES)
                chunks.append(self._generate_locked(size, None))
                remaining -= size
        return b"".join(chunks)

    def zeroize(self) -> None:
        """Overwrite and drop Key and V; the instance is unusable afterwards."""
        with self._lock:
            for buf in (self._key, self._v):
                if buf is not None:
                    buf[:] = bytes(len(buf))
            self._key = None
            self._v = None
            self._reseed_counter = 0

    def __repr__(self) -> str:
        mode = "AES-256 use df" if self._use_df else "AES-256 no df"
        if self._key is None:
            return f"CtrDrbg(mode={mode!r}, zeroized)"
        return f"CtrDrbg(mode={mode!r}, reseed_counter={self._reseed_counter})"

    def __getstate__(self) -> None:
        raise TypeError("CtrDrbg state cannot be copied or pickled")

    def _check_df_entropy(self, entropy: bytes) -> None:
        if len(entropy) < MIN_ENTROPY_BYTES:
            raise ValueError(
                f"entropy must be at least {MIN_ENTROPY_BYTES} bytes with the derivation "
                f"function, got {len(entropy)}"
            )

    def _check_nodf_entropy(self, entropy: bytes) -> None:
        if len(entropy) != SEED_LEN:
            raise ValueError(
                f"entropy must be exactly {SEED_LEN} bytes without the derivation function, "
                f"got {len(entropy)}"
            )

    @staticmethod
    def _pad_nodf(name: str, data: bytes) -> bytes:
        if len(data) > SEED_LEN:
            raise ValueError(
                f"{name} must be at most {SEED_LEN} bytes without the derivation function, "
                f"got {len(data)}"
            )
        return data + bytes(SEED_LEN - len(data))

    def _prepare_additional(self, additional: bytes) -> bytes | None:
        additional = _check_bytes("additional", additional)
        # The standard treats an empty additional input as Null: no extra Update call.
        if not additional:
            return None
        if self._use_df:
            return _block_cipher_df(additional)
        return self._pad_nodf("additional", additional)

    def _require_state(self) -> None:
        if self._key is None:
            raise RuntimeError("CtrDrbg has been zeroized; instantiate a new one")

    def _update(self, provided_data: bytes) -> None:
        assert self._key is not None and self._v is not None
        temp = _ctr_keystream(self._key, self._v, SEED_LEN)
        self._set_state(_xor(temp, provided_data))

    def _set_state(self, seed: bytes) -> None:
        assert self._key is not None and self._v is not None
        self._key[:] = seed[:KEY_LEN]
        self._v[:] = seed[KEY_LEN:]

    def _generate_locked(self, n: int, additional: bytes | None) -> bytes:
        assert self._key is not None and self._v is not None
        if additional is not None:
            self._update(additional)
        n_blocks = -(-n // BLOCK_LEN)
        # The output blocks and the three blocks of the trailing Update use consecutive
        # counter values, so one CTR call yields both.
        stream = _ctr_keystream(self._key, self._v, n_blocks * BLOCK_LEN + SEED_LEN)
        out = stream[:n]
        temp = stream[n_blocks * BLOCK_LEN :]
        self._set_state(_xor(temp, additional if additional is not None else _ZERO_SEED))
        self._reseed_counter += 1
        return out
