"""What machine a benchmark ran on: CPU, kernel, OpenSSL and Python versions, engines."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from typing import Any

import cryptography
from cryptography.hazmat.backends.openssl.backend import backend as _openssl

from cryptoffload import __version__
from cryptoffload.core.provider import Provider
from cryptoffload.engines.software import cpu_crypto_features


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Hardware", "cpu", "Processor"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _openssl_cli() -> str | None:
    path = shutil.which("openssl")
    if path is None:
        return None
    try:
        out = subprocess.run([path, "version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def describe(provider: Provider | None = None) -> dict[str, Any]:
    """Facts about this machine and, when given, the engines of ``provider``."""
    info: dict[str, Any] = {
        "cpu_model": _cpu_model(),
        "cpu_crypto_features": cpu_crypto_features(),
        "cores": os.cpu_count(),
        "arch": platform.machine(),
        "kernel": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "openssl": _openssl.openssl_version_text(),
        "openssl_cli": _openssl_cli(),
        "cryptography": cryptography.__version__,
        "cryptoffload": __version__,
    }
    if provider is not None:
        info["engines"] = [
            {
                "name": name,
                "available": caps.available,
                "reason": caps.reason,
                "detail": {k: str(v) for k, v in caps.detail.items()},
            }
            for name, caps in provider.capabilities.items()
        ]
    return info
