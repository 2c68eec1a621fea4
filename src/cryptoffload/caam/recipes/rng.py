"""Random bytes from RNG4 state handle 0: one shared descriptor, each job an output sequence."""

from __future__ import annotations

from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.recipes.base import (
    Buffers,
    DriverLike,
    Prepared,
    execute,
    first_output,
)
from cryptoffload.caam.recipes.templates import seq_job, shared

__all__ = ["CHUNK", "prepare_random", "random_bytes"]

#: The most one job draws (the output buffer a board's DMA pool must hold at once).
CHUNK = 1 << 20


def _build(b: DescriptorBuilder, pr: bool) -> None:
    """Generate (caamprng's OPERATION) into the whole output sequence."""
    b.header(kind="shared", share="serial")
    b.operation(1, "RNG", aai="SH0", state="update", pr=pr)
    b.math("ADD", "SEQOUTLEN", "MATH0", "VARSEQOUTLEN")
    b.fifo_store(0, "RNGSTORE", seq=True, vlf=True)


def prepare_random(
    driver: DriverLike, n: int, *, prediction_resistance: bool = False
) -> Prepared[bytes]:
    """One job drawing ``n`` (> 0) bytes; RNG4 must be instantiated (``driver.ensure_rng``)."""
    if n <= 0:
        raise ValueError(f"n must be positive, got {n}")
    pr = bool(prediction_resistance)
    sh, shlen = shared(driver, ("rng", pr), None, lambda b: _build(b, pr))
    with Buffers(driver) as bufs:
        out = bufs.room(n)
        bufs.want(out, n)
    words = seq_job(driver, shlen, seq_in=None, seq_out=False).fill(sh, out, n)
    return Prepared(words, bufs, first_output)


def random_bytes(driver: DriverLike, n: int, *, prediction_resistance: bool = False) -> bytes:
    """``n`` random bytes from the engine (instantiating RNG4 first if it is not)."""
    driver.ensure_rng()
    parts = []
    for at in range(0, n, CHUNK):
        job = prepare_random(
            driver, min(CHUNK, n - at), prediction_resistance=prediction_resistance
        )
        parts.append(execute(driver, job))
    return b"".join(parts)
