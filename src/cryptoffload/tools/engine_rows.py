"""What `engines --json` says of each engine (and `run --counters` with each engine's counters)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cryptoffload.core.provider import Provider
from cryptoffload.engines.base import Capabilities


def engine_rows(provider: Provider) -> list[dict[str, Any]]:
    """Each engine's capabilities; with ``figures`` for an engine that keeps its own (the CAAM
    driver's jobs, descriptor words, bytes each way...), beside the provider's counters."""
    engines = {engine.name: engine for engine in provider.engines}
    rows = []
    for name, caps in provider.capabilities.items():
        row = _caps_row(name, caps)
        figures = getattr(engines.get(name), "figures", None)
        if isinstance(figures, Mapping) and figures:
            row["figures"] = dict(figures)
        rows.append(row)
    return rows


def _caps_row(name: str, caps: Capabilities) -> dict[str, Any]:
    return {
        "name": name,
        "available": caps.available,
        "reason": caps.reason,
        "algorithms": sorted(caps.algorithms),
        "min_size": dict(caps.min_size),
        "detail": {k: v for k, v in caps.detail.items()},
    }
