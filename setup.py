"""Build the optional compiled direct path (cryptoffload.core._directpath) and the software
engine's compiled contexts (cryptoffload.engines._contexts); metadata is pyproject's.

The extensions are built with the machine's C compiler, else with the one the package index
provides (ziglang, which build_support/backend.py asks for when no compiler is found). Where
neither can build them (no Python headers, say), ``optional=True`` lets the install go on and
cryptoffload uses the pure-Python twins; ``CRYPTOFFLOAD_PURE_PYTHON=1`` at install
time skips the builds.
"""

import importlib.util
import os
import shutil
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    """build_ext that falls back to ``python -m ziglang cc`` when the configured compiler is
    missing, and skips the extensions when the pure-Python twins are asked for."""

    def build_extensions(self) -> None:
        if os.environ.get("CRYPTOFFLOAD_PURE_PYTHON", "") not in ("", "0"):
            print("CRYPTOFFLOAD_PURE_PYTHON is set: the compiled direct path is not built")
            return
        compiler = self.compiler
        cc = getattr(compiler, "compiler_so", None)
        if cc and shutil.which(cc[0]) is None and importlib.util.find_spec("ziglang"):
            zig = [sys.executable, "-m", "ziglang", "cc"]
            print(f"no {cc[0]} here: compiling with {' '.join(zig)} (from the package index)")
            compiler.set_executables(
                compiler=zig + compiler.compiler[1:],
                compiler_so=zig + compiler.compiler_so[1:],
                linker_so=zig + compiler.linker_so[1:],
            )
        super().build_extensions()


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        Extension(
            "cryptoffload.core._directpath",
            sources=["src/cryptoffload/core/_directpath.c"],
            optional=True,
        ),
        Extension(
            "cryptoffload.engines._contexts",
            sources=["src/cryptoffload/engines/_contexts.c"],
            optional=True,
        ),
    ],
)
