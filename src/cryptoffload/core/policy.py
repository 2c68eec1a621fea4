"""Offload policy: per-algorithm minimum and maximum offload sizes, deny and require lists; TOML."""

from __future__ import annotations

import fnmatch
import functools
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from cryptoffload.core.names import all_algorithms

if TYPE_CHECKING:
    from cryptoffload.core.adaptive import AdaptiveSettings

ENV_VAR = "CRYPTOFFLOAD_POLICY"

#: Built in when neither the policy nor the engine says otherwise. The QorIQ article measured
#: AES-CBC/CTR/ECB below ~128 bytes as faster in software and chose 256 bytes; GCM always pays.
DEFAULT_MIN_SIZE: dict[str, int] = {"aes-*-cbc": 256, "aes-*-ctr": 256, "aes-*-ecb": 256}


@functools.cache
def _known() -> tuple[str, ...]:
    return tuple(all_algorithms())


def _check_algorithm(name: str, pattern: str) -> None:
    """ValueError unless ``pattern`` is an algorithm name or a glob matching at least one."""
    known = _known()
    if pattern in known or any(fnmatch.fnmatchcase(alg, pattern) for alg in known):
        return
    glob = any(c in pattern for c in "*?[")
    what = "matches no algorithm name" if glob else "is not an algorithm name"
    import difflib  # here and in load and save: a program's start-up need not load them

    close = [repr(c) for c in difflib.get_close_matches(pattern.lower(), known, n=3)]
    listed = " or ".join(filter(None, [", ".join(close[:-1]), *close[-1:]]))
    hint = f"did you mean {listed}?" if close else "expected a name like aes-128-gcm"
    raise ValueError(
        f"{name} entry {pattern!r} {what}; {hint} (`cryptoffload engines -v` lists the names)"
    )


def _check_sizes(name: str, sizes: Mapping[str, int] | None) -> dict[str, int]:
    if sizes is None:
        return {}
    if not isinstance(sizes, Mapping):
        raise TypeError(
            f"{name} must map algorithm names to byte counts, got {type(sizes).__name__}"
        )
    out = {}
    for alg, size in sizes.items():
        if not isinstance(alg, str) or not isinstance(size, int) or isinstance(size, bool):
            raise TypeError(f"{name} entries must be str -> int, got {alg!r}: {size!r}")
        if size < 0:
            raise ValueError(f"{name}[{alg!r}] must be >= 0 bytes, got {size}")
        _check_algorithm(name, alg)
        out[alg] = size
    return out


def _check_names(name: str, names: Iterable[str] | None) -> tuple[str, ...]:
    if names is None:
        return ()
    if isinstance(names, str):
        raise TypeError(f"{name} must be a list of algorithm names, got the string {names!r}")
    out = tuple(names)
    for alg in out:
        if not isinstance(alg, str):
            raise TypeError(f"{name} entries must be algorithm names (str), got {alg!r}")
        _check_algorithm(name, alg)
    return out


_ENGINE_KEYS = ("min_size", "max_size", "exclude")


def _check_engines(engines: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """Per-engine sections, checked as the top-level entries are."""
    if engines is None:
        return {}
    if not isinstance(engines, Mapping):
        raise TypeError(f"engines must map engine names to tables, got {type(engines).__name__}")
    out = {}
    for name, section in engines.items():
        if not isinstance(name, str) or not isinstance(section, Mapping):
            raise TypeError(f"engines entries must be engine name -> table, got {name!r}")
        unknown = set(section) - set(_ENGINE_KEYS)
        if unknown:
            raise ValueError(
                f"engines[{name!r}]: unknown key(s) {sorted(unknown)}; "
                f"expected some of {list(_ENGINE_KEYS)}"
            )
        where = f"engines[{name!r}]"
        out[name] = {
            "min_size": _check_sizes(f"{where}.min_size", section.get("min_size")),
            "max_size": _check_sizes(f"{where}.max_size", section.get("max_size")),
            "exclude": _check_names(f"{where}.exclude", section.get("exclude")),
        }
    return out


def _adaptive_settings(value: Any) -> AdaptiveSettings | None:
    """``AdaptiveSettings.parse(value)``; the module is loaded only when routing is asked for."""
    if value is None or value is False:
        return None
    from cryptoffload.core.adaptive import AdaptiveSettings  # here: off by default

    return AdaptiveSettings.parse(value)


def _first_match(patterns: Iterable[str], alg: str) -> str | None:
    return next((pat for pat in patterns if fnmatch.fnmatchcase(alg, pat)), None)


def _lookup_key(table: Mapping[str, int], alg: str) -> str | None:
    """The entry of ``table`` that :func:`_lookup` reads for ``alg`` (exact, else longest glob)."""
    if alg in table:
        return alg
    matches = [pat for pat in table if fnmatch.fnmatchcase(alg, pat)]
    return max(matches, key=len) if matches else None


def _check_satisfiable(policy: Policy) -> None:
    """ValueError when some algorithm could never be served as the policy asks.

    An algorithm is both required and denied when a known algorithm name matches an entry of
    each list (exact names, or globs that overlap on some name: ``require = ["aes-128-gcm"]`` with
    ``deny = ["aes-*"]`` is refused, as is ``require = ["aes-*"]`` with ``deny = ["aes-128-gcm"]``).
    A ``min_size`` above the ``max_size`` that applies to the same algorithm (read as
    :meth:`Policy.limits` reads them: exact name, else the longest glob; an engine's section
    before the top level) leaves no size an engine may take.
    """
    for alg in _known():
        required = _first_match(policy.require, alg)
        denied = _first_match(policy.deny, alg) if required is not None else None
        if required is not None and denied is not None:
            raise ValueError(
                f"require entry {required!r} and deny entry {denied!r} both cover {alg!r}: "
                "it could never run (denied engines, required not in software); "
                "remove it from one of the lists"
            )
    tables = [("", policy.min_size, "", policy.max_size)]
    for name, section in policy.engines.items():
        where = f"engines[{name!r}]."
        tables.append((where, section["min_size"], where, section["max_size"]))
    for low_where, low_table, high_where, high_table in tables:
        if not low_table and not high_table:
            continue
        for alg in _known():
            low_at, low_key = low_where, _lookup_key(low_table, alg)
            if low_key is None and low_where:
                low_at, low_key = "", _lookup_key(policy.min_size, alg)
            high_at, high_key = high_where, _lookup_key(high_table, alg)
            if high_key is None and high_where:
                high_at, high_key = "", _lookup_key(policy.max_size, alg)
            if low_key is None or high_key is None:
                continue
            low = (low_table if low_at else policy.min_size)[low_key]
            high = (high_table if high_at else policy.max_size)[high_key]
            if low > high:
                raise ValueError(
                    f"{low_at}min_size[{low_key!r}] = {low} is above "
                    f"{high_at}max_size[{high_key!r}] = {high} for {alg!r}: "
                    "no size could be offloaded; make min_size <= max_size"
                )


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else dict(value)


def _lookup(table: Mapping[str, int], alg: str) -> int | None:
    """Exact name first, then the most specific glob (the longest pattern)."""
    if alg in table:
        return table[alg]
    matches = [pat for pat in table if fnmatch.fnmatchcase(alg, pat)]
    return table[max(matches, key=len)] if matches else None


class Policy:
    """Which operations engines may take.

    ``min_size`` / ``max_size`` map algorithm names (or globs like ``aes-*-cbc``) to bytes of
    payload; an op outside the range runs in software, counted as ``below-threshold`` or
    ``too-large``. ``deny`` lists algorithms never offloaded (``denied``). ``require`` lists
    algorithms that must be offloaded: when no engine takes one, :class:`OffloadRequired` is raised
    instead of running software. A name that is no algorithm, or a glob that matches none, is a
    ValueError: a typo in a policy must not pass unnoticed. So is a policy that could never be
    satisfied: an algorithm that some ``require`` entry and some ``deny`` entry both match (exact
    names or overlapping globs), or a ``min_size`` above the ``max_size`` that applies to the same
    algorithm (at the top level or in an engine's section); the message names both settings.

    ``engines`` holds what applies to one engine only, by engine name: its own ``min_size`` and
    ``max_size`` (which win over the ones above for that engine), and ``exclude``: algorithms the
    engine is not offered at all, as if it did not claim them (no per-operation cost, no decline
    counted; where only software is left, the primitives call OpenSSL directly).
    ``cryptoffload calibrate`` writes these from measurements, with the figures behind them in
    ``calibration`` (plain data, kept and written back, never read for routing).

    ``adaptive`` (off by default) turns on adaptive routing: True for the defaults, or a table
    (``[adaptive]`` in TOML: ``enabled``, ``sample``, ``margin``, ``min_samples``, ``alpha``);
    see :mod:`cryptoffload.adaptive`. Kept as :class:`AdaptiveSettings`, or None when off.
    """

    __slots__ = ("adaptive", "calibration", "deny", "engines", "max_size", "min_size", "require")

    def __init__(
        self,
        min_size: Mapping[str, int] | None = None,
        max_size: Mapping[str, int] | None = None,
        require: Iterable[str] | None = None,
        deny: Iterable[str] | None = None,
        engines: Mapping[str, Mapping[str, Any]] | None = None,
        calibration: Mapping[str, Any] | None = None,
        adaptive: bool | Mapping[str, Any] | AdaptiveSettings | None = None,
    ) -> None:
        self.adaptive = _adaptive_settings(adaptive)
        self.min_size = _check_sizes("min_size", min_size)
        self.max_size = _check_sizes("max_size", max_size)
        self.require = _check_names("require", require)
        self.deny = _check_names("deny", deny)
        self.engines = _check_engines(engines)
        if calibration is not None and not isinstance(calibration, Mapping):
            raise TypeError(f"calibration must be a table, got {type(calibration).__name__}")
        self.calibration = dict(calibration) if calibration is not None else None
        _check_satisfiable(self)

    def __repr__(self) -> str:
        engines = f", engines={self.engines!r}" if self.engines else ""
        adaptive = f", adaptive={self.adaptive.to_dict()!r}" if self.adaptive else ""
        return (
            f"Policy(min_size={self.min_size!r}, max_size={self.max_size!r}, "
            f"require={list(self.require)!r}, deny={list(self.deny)!r}{engines}{adaptive})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Policy) and self.to_dict() == other.to_dict()

    def denies(self, alg: str) -> bool:
        """True when ``alg`` is on the deny list."""
        return any(fnmatch.fnmatchcase(alg, pat) for pat in self.deny)

    def requires(self, alg: str) -> bool:
        """True when ``alg`` must be offloaded."""
        return any(fnmatch.fnmatchcase(alg, pat) for pat in self.require)

    def excludes(self, alg: str, engine: str) -> bool:
        """True when ``engine`` is not to be offered ``alg`` at all (its ``exclude`` list)."""
        section = self.engines.get(engine)
        return section is not None and any(
            fnmatch.fnmatchcase(alg, pat) for pat in section["exclude"]
        )

    def limits(
        self,
        alg: str,
        engine_min: Mapping[str, int] | None = None,
        engine: str | None = None,
    ) -> tuple[int, int | None]:
        """(minimum, maximum) payload bytes an engine may take for ``alg``.

        The section of ``engine`` (by name) wins; then the policy's own value; then the
        engine's suggestion; then the built-in default.
        """
        section = self.engines.get(engine) if engine is not None else None
        low = _lookup(section["min_size"], alg) if section else None
        if low is None:
            low = _lookup(self.min_size, alg)
        if low is None and engine_min:
            low = _lookup(engine_min, alg)
        if low is None:
            low = _lookup(DEFAULT_MIN_SIZE, alg)
        high = _lookup(section["max_size"], alg) if section else None
        if high is None:
            high = _lookup(self.max_size, alg)
        return (low or 0, high)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as written to TOML (``engines``, ``calibration``, ``adaptive`` only when
        set)."""
        out: dict[str, Any] = {
            "require": list(self.require),
            "deny": list(self.deny),
            "min_size": dict(self.min_size),
            "max_size": dict(self.max_size),
        }
        if self.engines:
            out["engines"] = {
                name: {key: _plain(value) for key, value in section.items() if value}
                for name, section in self.engines.items()
            }
        if self.calibration is not None:
            out["calibration"] = self.calibration
        if self.adaptive is not None:
            out["adaptive"] = self.adaptive.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "policy") -> Policy:
        """Build from plain data; unknown keys are an error, so a typo is never ignored."""
        known = {"require", "deny", "min_size", "max_size", "engines", "calibration", "adaptive"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(
                f"{source}: unknown key(s) {sorted(unknown)}; expected some of {sorted(known)}"
            )
        try:
            return cls(
                min_size=data.get("min_size"),
                max_size=data.get("max_size"),
                require=data.get("require"),
                deny=data.get("deny"),
                engines=data.get("engines"),
                calibration=data.get("calibration"),
                adaptive=data.get("adaptive"),
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{source}: {exc}") from None

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, source: str | None = None) -> Policy:
        """Read a policy file (TOML); errors start with ``source`` (default: the path)."""
        import tomllib
        from pathlib import Path

        path = Path(path)
        source = source or str(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{source}: not valid TOML: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{source}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                f"{exc.start}); a policy file is TOML, which is UTF-8"
            ) from None
        return cls.from_dict(data, source=source)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write this policy as TOML."""
        from pathlib import Path

        import tomli_w

        Path(path).write_text(tomli_w.dumps(self.to_dict()), encoding="utf-8")

    @classmethod
    def from_env(cls) -> Policy:
        """The policy in the file named by CRYPTOFFLOAD_POLICY, or the default policy.

        A file that cannot be read or is not a valid policy is a ValueError naming the variable
        and the path: the policy in force is never silently another one.
        """
        path = os.environ.get(ENV_VAR)
        if not path:
            return cls()
        try:
            return cls.load(path, source=f"{ENV_VAR}={path}")
        except OSError as exc:
            raise ValueError(
                f"{ENV_VAR}={path}: cannot read the policy file ({exc.strerror or exc}); "
                f"point {ENV_VAR} at a policy file (TOML) or unset it"
            ) from None
