"""`cryptoffload.install()`: offload an application that was not changed, in this process and in
the Python processes it starts, with its counters written to a file at exit."""

from __future__ import annotations

import atexit
import fcntl
import os
import sys
import types
from collections.abc import Iterable, Mapping, Sequence

from cryptoffload.tools.redirect import HOOK

try:
    from _json import encode_basestring_ascii as _json_string
except ImportError:  # an interpreter without json's C part
    from json.encoder import encode_basestring_ascii as _json_string

#: `typing` is for type checkers only: importing it loads `re`, a cost `run` pays at start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from cryptoffload.core.policy import Policy
    from cryptoffload.core.provider import Provider

# The provider, its engines and policy and the stdlib views are imported where they are used:
# `run` and the processes it starts import this module at start-up (see install_for_run).

#: The variable a child process reads at start-up (JSON: engines, policy, only, counters, run).
ENV = "CRYPTOFFLOAD_RUN"
#: The folder whose ``sitecustomize`` reads it; put first on a child's PYTHONPATH.
STARTUP = os.path.join(os.path.dirname(os.path.realpath(__file__)), "_startup")
#: The variable naming the default provider's policy file (cryptoffload.core.policy.ENV_VAR).
POLICY_ENV = "CRYPTOFFLOAD_POLICY"


def install(
    engines: Sequence[Any] | None = None,
    *,
    only: Iterable[str] | None = None,
    policy: Policy | str | os.PathLike[str] | None = None,
    tls: bool = False,
) -> Provider:
    """Make this process's imports of `cryptography.hazmat.primitives.*` and
    `cryptography.fernet` resolve to cryptoffload's modules (for the importers named in
    ``only``, top-level package names, or every one but `cryptography`'s own), and return the
    provider their operations go to. Their imports of Python's ``hashlib`` and ``hmac`` resolve
    to views in which the hashes, HMACs and PBKDF2s an engine of that provider claims go
    through it (decided here, per algorithm: the others are Python's own functions).

    ``engines`` (specs or engine objects) and ``policy`` (a Policy or a TOML path) replace the
    default provider; without them it is the default one (the engines found, and the policy
    named by ``CRYPTOFFLOAD_POLICY``). Call it first thing: modules imported before keep what
    they imported. Calling it again changes ``only`` and, if given, the provider.

    With ``tls``, every ``ssl`` connection made from now on asks OpenSSL for kTLS (the kernel
    then does its records) and is counted under ``kernel-tls`` (:mod:`cryptoffload.ktls`).
    """
    from cryptoffload.core.provider import current
    from cryptoffload.stdlib import views as stdlib_views

    only = _checked_only(only)
    _set_provider(engines, policy)
    HOOK.install(only)
    provider = current()
    HOOK.mirror_stdlib(stdlib_views(provider))
    if tls:
        from cryptoffload.ktls import hook

        hook.install()
    return provider


def install_for_run(
    engines: Sequence[Any] | None = None,
    *,
    only: Iterable[str] | None = None,
    policy: Policy | str | os.PathLike[str] | None = None,
    tls: bool = False,
) -> None:
    """:func:`install` as `run` and the processes it starts need it, starting in a few
    milliseconds: the import hook now, and the rest when the program first needs it.

    Without ``engines`` and ``policy``, the provider (the engines found, each probed) is built
    by the program's first operation, or by its first import of ``hashlib`` or ``hmac``, which
    decides their views from it (the default provider then; on a machine where no engine's
    device may be, Python's modules without building it). With ``engines`` alone, they are built
    here (a bad spec is an error before the program starts) and the provider of them at the
    same first need (with ``software`` only, which claims nothing, Python's modules without
    building it). With ``policy``, it is built here, as :func:`install` builds it, and the views
    are decided from it at that first import. A policy file named by ``CRYPTOFFLOAD_POLICY`` is
    read here for the same reason. With ``tls``, ``ssl`` connections
    ask for kTLS from the moment the program imports ``ssl`` (at once if it is imported)."""
    only = _checked_only(only)
    provider = chosen = None
    if policy is not None:
        provider = _set_provider(engines, policy)
    elif engines is not None:
        chosen = _choose(engines)
    elif os.environ.get(POLICY_ENV):
        from cryptoffload.core.policy import Policy

        Policy.from_env()  # its errors now, not at the program's first operation
    HOOK.install(only)
    HOOK.mirror_stdlib_when_imported(lambda: _stdlib_views(provider, chosen))
    if tls:
        HOOK.call_when_imported("ssl", _install_kernel_tls)


def _checked_only(only: Iterable[str] | None) -> list[str] | None:
    if only is None:
        return None
    only = [only] if isinstance(only, str) else list(only)
    for name in only:
        if not isinstance(name, str) or not name or "." in name:
            raise ValueError(f"only takes top-level package names such as 'paramiko', got {name!r}")
    return only


def _set_provider(
    engines: Sequence[Any] | None, policy: Policy | str | os.PathLike[str] | None
) -> Provider | None:
    """The provider ``engines`` and ``policy`` make, made the default; None (the default left
    as it is) without them."""
    if engines is None and policy is None:
        return None
    from cryptoffload.core.policy import Policy
    from cryptoffload.core.provider import Provider, set_default_provider

    if policy is not None and not isinstance(policy, Policy):
        policy = Policy.load(policy)
    provider = Provider(list(engines or ()), policy=policy)
    set_default_provider(provider)
    return provider


def _choose(engines: Sequence[Any]) -> list[Any]:
    """The engines the default provider is built from at its first need (checked now)."""
    from cryptoffload import engines as registry

    if (
        "cryptoffload.core.provider" in sys.modules
    ):  # a default built already gives way, as replaced
        from cryptoffload.core.provider import set_default_provider

        set_default_provider(None)
    chosen = registry.choose(list(engines))
    if not all(isinstance(engine, str) or _has_engine_members(engine) for engine in chosen):
        from cryptoffload.core.provider import Provider

        Provider(chosen)  # its TypeError for the engine short of a member, now
    return chosen


def _has_engine_members(engine: Any) -> bool:
    """What the Provider checks of an engine before probing it (see engines/base.py)."""
    return (
        isinstance(getattr(engine, "name", None), str)
        and callable(getattr(engine, "probe", None))
        and callable(getattr(engine, "run", None))
    )


def _stdlib_views(
    provider: Provider | None, chosen: Sequence[Any] | None = None
) -> Mapping[str, types.ModuleType]:
    """The hashlib and hmac views under ``provider``, or under the default provider (built now
    if no operation has built it); none, without building it, where it is to be of ``chosen``
    engines that are software alone, or of the engines found where no engine may be found and
    no policy file named (no engine to claim a hash, no policy to require its offload)."""
    if chosen is not None:
        if all(engine == "software" for engine in chosen):
            return {}
    elif provider is None and not os.environ.get(POLICY_ENV):
        from cryptoffload import engines

        if not engines.may_discover_any():
            return {}
    from cryptoffload.core.provider import default_provider
    from cryptoffload.stdlib import views

    return views(provider if provider is not None else default_provider())


def _install_kernel_tls() -> None:
    from cryptoffload.ktls import hook

    hook.install()


def uninstall() -> None:
    """Give imports back to Python (modules imported meanwhile keep cryptoffload's)."""
    HOOK.uninstall()


def installed() -> bool:
    """Whether the import hook is in place."""
    return HOOK.installed


def child_environment(
    env: Mapping[str, str],
    *,
    engines: Sequence[str] | None,
    policy: str | None,
    only: Sequence[str] | None,
    counters: str | None,
    run: str | None = None,
    tls: bool = False,
) -> dict[str, str]:
    """``env`` plus what makes Python processes started from it install the hook at start-up
    (``sys.executable`` children and theirs): ``CRYPTOFFLOAD_RUN`` and the start-up folder first
    on ``PYTHONPATH``."""
    settings = {
        "engines": list(engines) if engines else None,
        "policy": policy,
        "only": list(only) if only else None,
        "counters": counters,
        "run": run or os.urandom(16).hex(),
        "tls": tls,
    }
    out = dict(env)
    out[ENV] = _json(settings)
    paths = [str(STARTUP), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    out["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return out


def _json(value: object) -> str:
    """``json.dumps(value)`` of the settings (None, bools, strings, lists and dicts of them),
    without importing json: its import loads re and compiles patterns, which `run`'s start-up
    does without."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_json, value)) + "]"
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return "{" + ", ".join(f"{_json(k)}: {_json(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not a setting run passes on: {value!r}")


def from_environment(env: Mapping[str, str] | None = None) -> bool:
    """Install as ``CRYPTOFFLOAD_RUN`` says (a process started under ``cryptoffload run``);
    False when it is not set."""
    raw = (os.environ if env is None else env).get(ENV)
    if not raw:
        return False
    import json

    settings = json.loads(raw)
    install_for_run(
        settings.get("engines"),
        only=settings.get("only"),
        policy=settings.get("policy"),
        tls=bool(settings.get("tls")),
    )
    if settings.get("counters"):
        atexit.register(write_counters, settings["counters"], settings["run"])
    return True


def check_counters_path(path: str | os.PathLike[str]) -> None:
    """Refuse (ValueError) a ``--counters`` path that :func:`write_counters` must not or cannot
    write: an existing file other than an empty one or a counters file (which an earlier run
    wrote, and this run replaces), a directory, a path in a directory that does not exist."""
    shown = os.fspath(path)
    if os.path.isdir(path):
        raise ValueError(f"--counters {shown}: is a directory; give a file name")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValueError(f"--counters {shown}: no directory {parent} to write it in")
    try:
        with open(path, "rb") as f:
            content = f.read(_COUNTERS_READ_LIMIT + 1)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ValueError(f"--counters {shown}: cannot read it: {exc.strerror or exc}") from None
    why = _not_counters(content) if content.strip() else None
    if why:
        raise ValueError(
            f"--counters {shown}: not a counters file ({why}); run would replace it, so it is "
            "left alone: give a new file name, or the file an earlier run --counters wrote"
        )


#: A counters file is a few KiB per engine: a file far larger is something else.
_COUNTERS_READ_LIMIT = 16 << 20


def _not_counters(text: str | bytes) -> str | None:
    """Why ``text`` is not what :func:`write_counters` writes, or None."""
    if len(text) > _COUNTERS_READ_LIMIT:
        return f"over {_COUNTERS_READ_LIMIT >> 20} MiB"
    import json

    try:
        data = json.loads(text)
    except ValueError:
        return "not JSON"
    if not (
        isinstance(data, dict)
        and isinstance(data.get("run"), str)
        and isinstance(data.get("processes"), int)
        and isinstance(data.get("engines"), list)
    ):
        return "JSON without the run, processes and engines of a counters file"
    return None


def write_counters(
    path: str | os.PathLike[str],
    run: str,
    *,
    command: Sequence[str] | None = None,
    exit_status: int | None = None,
) -> None:
    """Add this process's counters to the JSON file at ``path`` (under a lock: the processes of
    one run add up; a file left by another run is replaced). The shape is ``engines --json``'s,
    each engine row with its ``counters`` (algorithm -> ops, bytes, declined, faults)."""
    import json

    from cryptoffload.core.provider import current
    from cryptoffload.tools.engine_rows import engine_rows

    provider = current()
    tls = _kernel_tls_report()  # first: it counts the connections still open
    snapshot = provider.counters.snapshot()
    mine = {
        "run": run,
        "processes": 1,
        "engines": [
            {**row, "counters": snapshot.get(row["name"], {})} for row in engine_rows(provider)
        ],
        "policy": provider.policy.to_dict(),
    }
    if tls is not None:
        mine["kernel_tls"] = tls
    names = {row["name"] for row in mine["engines"]}
    mine["engines"] += [
        {"name": name, "counters": cells} for name, cells in snapshot.items() if name not in names
    ]
    with open(path, "a+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        text = f.read()
        previous = None
        if text.strip() and _not_counters(text) is None:
            previous = json.loads(text)
        merged = _merge(previous, mine) if previous and previous.get("run") == run else mine
        if command is not None:
            merged["command"] = list(command)
        if exit_status is not None:
            merged["exit_status"] = exit_status
        f.seek(0)
        f.truncate()
        json.dump(merged, f, indent=2, sort_keys=True)
        f.write("\n")


def _kernel_tls_report() -> dict[str, Any] | None:
    """This process's kTLS connections (``run --tls``), None when it made none."""
    connections = sys.modules.get("cryptoffload.ktls.connections")
    return connections.REGISTRY.report() if connections is not None else None


def _merge(into: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    """``into`` with ``more``'s processes and counters added, engine by engine."""
    into["processes"] = into.get("processes", 0) + more["processes"]
    if "kernel_tls" in more:
        mine = into.setdefault("kernel_tls", {})
        for key, value in more["kernel_tls"].items():
            mine[key] = _add(mine.get(key), value) if key != "reasons" else value
    rows = {row["name"]: row for row in into.get("engines", [])}
    for row in more["engines"]:
        if row["name"] not in rows:
            into.setdefault("engines", []).append(row)
            continue
        counters = rows[row["name"]].setdefault("counters", {})
        for alg, cell in row["counters"].items():
            counters[alg] = _add(counters.get(alg), cell)
    return into


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, dict):
        return {key: _add(a.get(key), b.get(key)) for key in a.keys() | b.keys()}
    return a + b
