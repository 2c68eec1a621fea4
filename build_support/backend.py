"""setuptools' build backend, asking for a C compiler from the package index (ziglang) when the
machine has none, so that the compiled direct path builds on a fresh machine without one."""

from __future__ import annotations

import os
import shlex
import shutil
import sysconfig

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (the backend's other hooks, unchanged)

#: The compiler the package index provides (``python -m ziglang cc``).
ZIG = "ziglang"


def machine_compiler() -> str | None:
    """The C compiler setuptools would run here (``$CC``, else Python's own), if on PATH."""
    words = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    return shutil.which(words[0]) if words else None


def _compiler_wanted() -> list[str]:
    if os.environ.get("CRYPTOFFLOAD_PURE_PYTHON", "") not in ("", "0"):
        return []  # no compiled direct path wanted: nothing to fetch
    return [] if machine_compiler() else [ZIG]


def get_requires_for_build_wheel(config_settings=None):
    """setuptools' requirements, and ziglang where no C compiler is found."""
    return _setuptools.get_requires_for_build_wheel(config_settings) + _compiler_wanted()


def get_requires_for_build_editable(config_settings=None):
    """As :func:`get_requires_for_build_wheel`, for ``pip install -e``."""
    return _setuptools.get_requires_for_build_editable(config_settings) + _compiler_wanted()
