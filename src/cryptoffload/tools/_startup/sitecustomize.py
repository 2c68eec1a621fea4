"""Python start-up under `cryptoffload run`: install the import hook when ``CRYPTOFFLOAD_RUN`` is
set (a child of the run), then hand over to the interpreter's own ``sitecustomize``, if any."""

import importlib
import os
import sys


def _install() -> None:
    if not os.environ.get("CRYPTOFFLOAD_RUN"):
        return
    try:
        from cryptoffload.tools.install import from_environment
    except ImportError:  # another interpreter, without cryptoffload: run as it is
        return
    try:
        from_environment()
    except Exception as exc:  # the program must still run: say why it is not offloaded
        print(f"cryptoffload: not offloading this process: {exc}", file=sys.stderr)


def _chain() -> None:
    """Import the ``sitecustomize`` this folder hides (Debian's, a virtualenv's...)."""
    here = os.path.dirname(os.path.abspath(__file__))
    mine = sys.modules.pop("sitecustomize", None)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        if mine is not None:
            sys.modules["sitecustomize"] = mine
    finally:
        sys.path[:] = saved


_install()
_chain()
