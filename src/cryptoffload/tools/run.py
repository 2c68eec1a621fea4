"""`cryptoffload run`: run a program that was not changed, its `cryptography` imports resolved to
cryptoffload's modules (and those of the Python processes it starts), as `coverage run` does.

    python -m cryptoffload run [--engines LIST] [--policy FILE] [--counters FILE]
                               [--only PKG,...] (-m MODULE | SCRIPT) [ARGS...]
"""

from __future__ import annotations

import importlib.util
import io
import os
import runpy
import sys
import types
from collections.abc import Sequence

from cryptoffload.tools.engine_specs import engine_list
from cryptoffload.tools.install import (
    check_counters_path,
    child_environment,
    install_for_run,
    write_counters,
)
from cryptoffload.tools.redirect import ImportHook

# A wrapper's start-up is its users' cost on every run of a short program: this module loads
# argparse (and with it re) only for the command lines it cannot read plainly (see main), and
# typing not at all.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

#: Options of ``run`` that take a value (everything after the target is the program's).
_VALUED = ("--engines", "--engine", "--policy", "--counters", "--only")

USAGE = (
    "cryptoffload run [--engines LIST] [--policy FILE] [--counters FILE] [--only PKG,...] "
    "[--tls] (-m MODULE | SCRIPT) [ARGS...]"
)
DESCRIPTION = (
    "Run a Python program unchanged with its imports of cryptography.hazmat.primitives.* and "
    "cryptography.fernet resolved to cryptoffload's modules, so its crypto goes through the "
    "engines and is counted. Python processes it starts with sys.executable inherit this."
)


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``run`` subcommand of the ``cryptoffload`` command (its target and arguments are split
    off before argparse sees them: see :func:`split`)."""
    p = sub.add_parser(
        "run",
        help="run a program unchanged, its crypto offloaded and counted",
        usage=USAGE,
        description=DESCRIPTION,
    )
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``run``'s options, on the subcommand or on :func:`main`'s own parser."""
    p.add_argument(
        "--engines",
        "--engine",
        dest="specs",
        action="extend",
        type=engine_list,
        metavar="LIST",
        help="comma-separated engine specs instead of the engines found, as for bench "
        "(e.g. caam:model=t2080,seed=01,software; passthrough sends every op down the "
        "engine path)",
    )
    p.add_argument("--policy", metavar="FILE", help="policy TOML (default: $CRYPTOFFLOAD_POLICY)")
    p.add_argument(
        "--counters",
        metavar="FILE",
        help="write the counters (JSON, engines --json's shape with each engine's "
        "counters) when the program exits, its child processes' added in",
    )
    p.add_argument(
        "--only",
        metavar="PKG,...",
        help="redirect only the imports made by these top-level packages "
        "(the program run is __main__, or its module name with -m)",
    )
    p.add_argument(
        "--tls",
        action="store_true",
        help="TLS in Python's ssl through the kernel (kTLS): every ssl connection of the "
        "program and its Python children asks OpenSSL for it, and is counted under kernel-tls "
        "with the reason where the kernel does not take its records",
    )
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    p.add_argument("script", nargs="?", help="the script to run")
    p.set_defaults(func=cmd_run, program_args=[])


def main(argv: Sequence[str]) -> int:
    """``python -m cryptoffload run ...`` without loading the other commands (start-up matters
    for a wrapper): the program's exit status, or 2 for bad use."""
    own, program_args = split(argv)
    args = read_plainly(own)
    if args is None:  # argparse's answer: help, an abbreviation, or its words for an error
        import argparse

        parser = argparse.ArgumentParser(
            prog="cryptoffload run", usage=USAGE, description=DESCRIPTION
        )
        add_arguments(parser)
        args = parser.parse_args(own)
    args.program_args = program_args
    try:
        return cmd_run(args)
    except Exception as exc:
        from cryptoffload.errors import CryptoffloadError  # only now: it loads `cryptography`

        if not isinstance(exc, (CryptoffloadError, ValueError, OSError)):
            raise
        print(f"cryptoffload run: {exc}", file=sys.stderr)
        return 2


#: ``run``'s options that take a value, as :func:`read_plainly` reads them: where each goes.
_DESTINATIONS = {
    "--engines": "specs",
    "--engine": "specs",
    "--policy": "policy",
    "--counters": "counters",
    "--only": "only",
    "-m": "module",
}


def read_plainly(own: Sequence[str]) -> types.SimpleNamespace | None:
    """``run``'s own arguments (:func:`split`'s first list) as the parser of
    :func:`add_arguments` reads them, when they are written plainly: each option in full, its
    value the next argument (not starting with ``-``), the script last. None for anything else
    (``--help``, ``--engines=x``, an abbreviation, a value missing or refused), which only
    argparse may answer."""
    read: dict[str, object] = dict.fromkeys(("specs", "policy", "counters", "only"))
    read.update(tls=False, module=None, script=None, func=cmd_run, program_args=[])
    i = 0
    while i < len(own):
        token = own[i]
        if token == "--tls":
            read["tls"] = True
            i += 1
            continue
        dest = _DESTINATIONS.get(token)
        if dest is None:
            if token.startswith("-") or i != len(own) - 1:
                return None
            read["script"] = token
            break
        if i + 1 == len(own) or own[i + 1].startswith("-"):
            return None
        value = own[i + 1]
        if dest == "specs":
            try:
                specs = engine_list(value)
            except Exception:
                return None
            read["specs"] = [*(read["specs"] or ()), *specs]  # type: ignore[misc]
        else:
            read[dest] = value
        i += 2
    return types.SimpleNamespace(**read)


def split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(``run``'s own arguments, up to and including the target; the program's arguments)."""
    argv = list(argv)
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "-m":
            return argv[: i + 2], argv[i + 2 :]
        if token == "--":
            return argv[:i] + argv[i + 1 : i + 2], argv[i + 2 :]
        if token in _VALUED:
            i += 2
            continue
        if token.startswith("-"):
            i += 1
            continue
        return argv[: i + 1], argv[i + 1 :]
    return argv, []


def cmd_run(args: argparse.Namespace | types.SimpleNamespace, console: object = None) -> int:
    """Install the hook here and for children, run the target, write the counters; the
    program's exit status."""
    if bool(args.module) == bool(args.script):
        print(
            f"usage: {USAGE}\ncryptoffload run: give a SCRIPT or -m MODULE (one of them)",
            file=sys.stderr,
        )
        return 2
    specs = list(args.specs or ())
    only = [s.strip() for s in (args.only or "").split(",") if s.strip()] or None
    policy = os.path.abspath(args.policy) if args.policy else None
    counters = os.path.abspath(args.counters) if args.counters else None
    if args.counters:
        check_counters_path(args.counters)
    unreadable = _cannot_open(args.script) if args.script else None
    if unreadable:
        print(f"cryptoffload run: {unreadable}", file=sys.stderr)
        return 2  # as python's for a script it cannot open
    install_for_run(specs or None, only=only, policy=policy, tls=args.tls)
    run_id = os.urandom(16).hex()
    env = child_environment(
        os.environ,
        engines=specs,
        policy=policy,
        only=only,
        counters=counters,
        run=run_id,
        tls=args.tls,
    )
    os.environ.update({k: env[k] for k in ("CRYPTOFFLOAD_RUN", "PYTHONPATH")})
    target = ["-m", args.module] if args.module else [args.script]
    status = _run_target(args.module, args.script, args.program_args)
    if counters:
        write_counters(counters, run_id, command=[*target, *args.program_args], exit_status=status)
    return status


def _cannot_open(script: str) -> str | None:
    """Python's words for a script it cannot open, or None (a directory or zip file with a
    ``__main__`` is runpy's to look into)."""
    if os.path.isdir(script):
        return None
    try:
        with open(script, "rb"):
            pass
    except OSError as exc:
        return f"can't open file {os.path.abspath(script)!r}: [Errno {exc.errno}] {exc.strerror}"
    return None


def _run_target(module: str | None, script: str | None, program_args: list[str]) -> int:
    """Run the program as python would as ``__main__``; its exit status."""
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    try:
        if module:
            sys.argv = [module, *program_args]
            sys.path[0] = os.getcwd()
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            assert script is not None
            sys.argv = [script, *program_args]
            path = os.path.abspath(script)  # python's __file__ and messages are absolute
            sys.path[0] = os.path.dirname(path)
            run_path(path)
    except SystemExit as exc:
        return _exit_status(exc.code)
    except KeyboardInterrupt:
        return 130
    except BaseException as exc:
        return _uncaught(exc)
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0
    return 0


def run_path(path: str) -> None:
    """``runpy.run_path(path, run_name="__main__")``. A Python source file runs here as runpy
    runs it (in a ``__main__`` module of its own while it runs, ``sys.argv[0]`` its path), without
    runpy's import of pkgutil, which loads typing and re on Python 3.11: a third of `run`'s
    start-up. Anything else (a directory, a zip file, a compiled file) is runpy's to run."""
    if _path_importer(path) is not None:
        runpy.run_path(path, run_name="__main__")
        return
    with io.open_code(path) as f:
        source = f.read()
    if source.startswith(importlib.util.MAGIC_NUMBER):
        runpy.run_path(path, run_name="__main__")
        return
    code = compile(source, path, "exec")
    module = types.ModuleType("__main__")
    module.__dict__.update(
        __name__="__main__",
        __file__=path,
        __cached__=None,
        __doc__=None,
        __loader__=None,
        __package__="",
        __spec__=None,
    )
    saved_main, saved_argv0 = sys.modules.get("__main__"), sys.argv[0]
    sys.modules["__main__"], sys.argv[0] = module, path
    try:
        exec(code, module.__dict__)
    finally:
        sys.argv[0] = saved_argv0
        if saved_main is None:
            del sys.modules["__main__"]
        else:
            sys.modules["__main__"] = saved_main


def _path_importer(path: str) -> object | None:
    """``pkgutil.get_importer(path)``: what the path hooks make of ``path`` as a sys.path entry
    (None for a file that is neither a directory nor a zip file)."""
    try:
        return sys.path_importer_cache[path]
    except KeyError:
        pass
    for hook in sys.path_hooks:
        try:
            importer = hook(path)
        except ImportError:
            continue
        sys.path_importer_cache[path] = importer
        return importer
    return None


def _uncaught(exc: BaseException) -> int:
    """Report an exception the program did not catch as python does (exit status 1): through
    ``sys.excepthook`` with the program's frames only, or, for a target not found (no such
    module, no ``__main__``: nothing of the program ran), python's one line."""
    tb = _program_frames(exc)
    if tb is None and isinstance(exc, ImportError):
        print(f"cryptoffload run: {exc}", file=sys.stderr)
        return 1
    exc.__traceback__ = tb
    try:
        sys.excepthook(type(exc), exc, tb)
    except Exception as hook_failed:
        import traceback

        print("Error in sys.excepthook:", file=sys.stderr)
        below_us = hook_failed.__traceback__ and hook_failed.__traceback__.tb_next
        traceback.print_exception(type(hook_failed), hook_failed, below_us, chain=False)
        print("\nOriginal exception was:", file=sys.stderr)
        traceback.print_exception(type(exc), exc, tb)
    return 1


#: The import hook's entry points: import machinery, which python leaves out of tracebacks.
_HOOK_CODE = (ImportHook._import.__code__, ImportHook._import_module.__code__)


def _program_frames(exc: BaseException) -> types.TracebackType | None:
    """``exc``'s traceback without the frames above the program (this module's and runpy's)
    and without the import hook's, unless the hook raised ``exc`` itself (its last frame, an
    exception other than ImportError)."""
    entries = []
    tb = exc.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    above = (id(globals()), id(vars(runpy)))
    while entries and id(entries[0].tb_frame.f_globals) in above:
        entries.pop(0)
    hook = tuple(map(id, _HOOK_CODE))
    kept = [
        entry
        for at, entry in enumerate(entries)
        if id(entry.tb_frame.f_code) not in hook
        or (at == len(entries) - 1 and not isinstance(exc, ImportError))
    ]
    rebuilt = None
    for entry in reversed(kept):
        rebuilt = types.TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return rebuilt


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
