"""What the benchmarks read about their own process: resident memory."""

from __future__ import annotations


def rss_mib() -> float:
    """Resident size now, MiB (0 where /proc is absent)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0
