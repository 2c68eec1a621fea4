"""The ``pkcs11:`` spec: module path, token label and where the PIN is read from (never inline)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from cryptoffload.errors import BadEngineSpec

_OPTIONS = ("module", "token", "pin-env", "pin-file")


@dataclass(frozen=True)
class Spec:
    """What ``pkcs11:module=PATH,token=LABEL[,pin-env=VAR|pin-file=PATH]`` names."""

    module: str
    token: str
    pin_env: str | None = None
    pin_file: str | None = None

    def text(self) -> str:
        """The spec as written (it holds no PIN, only where to find one)."""
        parts = [f"module={self.module}", f"token={self.token}"]
        if self.pin_env:
            parts.append(f"pin-env={self.pin_env}")
        if self.pin_file:
            parts.append(f"pin-file={self.pin_file}")
        return "pkcs11:" + ",".join(parts)

    def read_pin(self) -> bytes | None:
        """The user PIN from the environment variable or file named, or None (no login).

        Raises LookupError naming the variable or file (never its content) when it is missing.
        """
        if self.pin_env:
            value = os.environ.get(self.pin_env)
            if value is None:
                raise LookupError(f"the PIN variable {self.pin_env} is not set")
            return value.encode()
        if self.pin_file:
            try:
                with open(self.pin_file, "rb") as f:
                    return f.read().rstrip(b"\r\n")
            except OSError as exc:
                raise LookupError(
                    f"the PIN file {self.pin_file} cannot be read: {exc.strerror}"
                ) from None
        return None


def parse(arg: str) -> Spec:
    """Read the options after ``pkcs11:``; BadEngineSpec for anything else (``pin=`` above all)."""
    values: dict[str, str] = {}
    for item in filter(None, arg.split(",")):
        name, eq, value = item.partition("=")
        if name == "pin":
            raise BadEngineSpec(
                "pkcs11 takes no PIN in the spec (specs end up in logs and process lists): "
                "use pin-env=VARIABLE or pin-file=PATH"
            )
        if name not in _OPTIONS or not eq or not value:
            raise BadEngineSpec(
                f"pkcs11 takes {', '.join(o + '=...' for o in _OPTIONS)}; got {name!r}"
            )
        if name in values:
            raise BadEngineSpec(f"pkcs11: option {name} given twice")
        values[name] = value
    missing = [o for o in ("module", "token") if o not in values]
    if missing:
        raise BadEngineSpec(
            "pkcs11 needs " + " and ".join(f"{o}=..." for o in missing)
            + ": pkcs11:module=PATH,token=LABEL[,pin-env=VAR|pin-file=PATH]"
        )  # fmt: skip
    if "pin-env" in values and "pin-file" in values:
        raise BadEngineSpec("pkcs11: give pin-env or pin-file, not both")
    return Spec(values["module"], values["token"], values.get("pin-env"), values.get("pin-file"))
