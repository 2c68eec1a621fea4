"""Synthetic benchmark rows and machine facts for the report, compare and sweep tests."""

from __future__ import annotations

from typing import Any

MACHINE: dict[str, Any] = {
    "cpu_model": "Test CPU",
    "cores": 2,
    "arch": "x86_64",
    "kernel": "Linux 6.1",
    "openssl": "OpenSSL 3.0.0",
    "python": "3.11.7",
}


def bench_row(engine: str = "software", median: float | None = 100.0, **extra: Any) -> dict:
    """One AES-128-GCM encrypt row at 16 KiB as `bench` saves it; ``extra`` overrides fields."""
    offloaded = engine != "software" and median is not None
    row = {
        "algorithm": "aes-128-gcm",
        "operation": "encrypt",
        "engine": engine,
        "block": 16384,
        "unit": "MiB/s",
        "median": median,
        "trials": [] if median is None else [median * 0.99, median, median * 1.01],
        "spread": None if median is None else 0.02,
        "noisy": False,
        "offloaded": offloaded,
        "offload_share": 1.0 if offloaded else 0.0,
        "note": "",
        "speedup": None,
    }
    row.update(extra)
    return row


def suptitle(figure: Any) -> str:
    """A matplotlib figure's title (``get_suptitle`` came in 3.8; pyproject allows 3.6)."""
    if hasattr(figure, "get_suptitle"):
        return figure.get_suptitle()
    title = getattr(figure, "_suptitle", None)
    return title.get_text() if title is not None else ""
