"""Where a stream of whole blocks leaves a cipher's IV: CTR's counter block, ChaCha20's nonce."""

from __future__ import annotations

#: ChaCha20's block counter is 32 bits: one nonce gives this many 64-byte blocks.
CHACHA20_BLOCKS = 1 << 32


def ctr_after(counter_block: bytes, blocks: int) -> bytes:
    """The 16-byte CTR counter block ``blocks`` blocks on (big-endian, wrapping at 2**128)."""
    counter = (int.from_bytes(counter_block, "big") + blocks) % (1 << 128)
    return counter.to_bytes(16, "big")


def chacha20_counter(nonce: bytes) -> int:
    """The block counter in ChaCha20's 16-byte nonce: its first 4 bytes, little-endian (RFC
    7539's layout, which OpenSSL and the kernel share)."""
    return int.from_bytes(nonce[:4], "little")


def chacha20_at(nonce: bytes, counter: int) -> bytes:
    """``nonce`` with its block counter set to ``counter`` (modulo 2**32)."""
    return (counter % CHACHA20_BLOCKS).to_bytes(4, "little") + bytes(nonce[4:])
