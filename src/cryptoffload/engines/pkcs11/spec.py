"""The ``pkcs11:`` spec: module path, token label and where the PIN is read from (never inline)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from cryptoffload.errors import BadEngineSpec

_OPTIONS = ("module", "token", "pin-env", "pin-file")
#: The longest first line a PIN file may have, its line end included: a PIN is far shorter
#: (SoftHSM takes up to 255 bytes), and the bound keeps /dev/zero or a wrong file from being
#: read into memory whole.
MAX_PIN_FILE_LINE = 1024
_NO_EMPTY_LOGIN = "an empty PIN is not tried (each failed login spends one of the token's retries)"


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
        """The user PIN from the environment variable or the first line of the file named, or
        None (no login).

        Raises LookupError naming the option (never the PIN) when the variable or file is
        missing, when the PIN is empty (a login with it would only spend one of the token's
        retries) or when the file has no line end within MAX_PIN_FILE_LINE bytes.
        """
        if self.pin_env:
            value = os.environ.get(self.pin_env)
            if value is None:
                raise LookupError(f"the PIN variable {self.pin_env} is not set")
            pin, where = value.encode(), f"pin-env={self.pin_env} gives an empty PIN"
        elif self.pin_file:
            pin = _first_line(self.pin_file)
            where = f"pin-file={self.pin_file} gives an empty PIN (its first line)"
        else:
            return None
        if not pin:
            raise LookupError(f"{where}: {_NO_EMPTY_LOGIN}")
        return pin


def _first_line(path: str) -> bytes:
    """The PIN file's first line without its line end, read no further than the bound."""
    try:
        with open(path, "rb") as f:
            line = f.readline(MAX_PIN_FILE_LINE + 1)
    except OSError as exc:
        raise LookupError(f"the PIN file {path} cannot be read: {exc.strerror}") from None
    if len(line) > MAX_PIN_FILE_LINE:
        raise LookupError(
            f"pin-file={path} has no line end in its first {MAX_PIN_FILE_LINE} bytes: "
            "the file must hold the PIN alone on its first line"
        )
    return line.rstrip(b"\r\n")


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
