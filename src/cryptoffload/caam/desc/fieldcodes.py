"""Field values for the descriptor builder: names or numbers checked against encoding tables."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cryptoffload.caam.desc import encoding as E

__all__ = ["aai_value", "bit24", "flag_bits", "in_range", "lookup", "names_of"]


def names_of(table: Mapping[int, str] | Iterable[str]) -> str:
    """The names a table allows, for error messages."""
    values = table.values() if isinstance(table, Mapping) else table
    return ", ".join(str(v) for v in values)


def in_range(field: str, value: Any, lo: int, hi: int) -> int:
    """``value`` when it is an int in lo..hi, else ValueError naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{field} must be an int {lo}..{hi}, got {value!r}")
    return value


def lookup(field: str, value: Any, table: Mapping[int, str], width: int) -> int:
    """A code given by its name in ``table`` or as an int that fits ``width`` bits."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << width:
        return value
    if isinstance(value, str):
        for code, name in table.items():
            if name.lower() == value.lower():
                return code
    top = f"0x{(1 << width) - 1:x}"
    raise ValueError(f"{field} must be one of {names_of(table)} or an int 0..{top}, got {value!r}")


def flag_bits(field: str, names: Iterable[str], table: Mapping[str, int]) -> int:
    """The OR of the bits ``names`` stand for in ``table``."""
    if isinstance(names, str):
        names = (names,)
    bits = 0
    for name in names:
        bit = {k.lower(): v for k, v in table.items()}.get(str(name).lower())
        if bit is None:
            raise ValueError(f"{field} must be names from {names_of(table)}, got {name!r}")
        bits |= bit
    return bits


def bit24(command: str, sgf: bool, vlf: bool, seq: bool) -> int:
    """Bit 24: SGF on the pointer forms, VLF on the SEQ forms."""
    if sgf and seq:
        raise ValueError(f"SEQ {command} has no sgf: bit 24 is vlf there (the S/G table is the "
                         "sequence's, set by SEQ IN/OUT PTR)")  # fmt: skip
    if vlf and not seq:
        raise ValueError(f"vlf is for SEQ {command} (seq=True)")
    return 0x0100_0000 if sgf or vlf else 0


def aai_value(alg: int, aai: str | int) -> int:
    """An OPERATION's AAI from its name for ``alg`` (RNG bits joined with ``|``, ``CBC|DK``)."""
    if alg == E.ALG_RNG and isinstance(aai, str):
        code = 0
        for part in aai.split("|"):
            part = part.strip().upper()
            if part in ("SH0", "SH1"):
                code |= int(part[2])
            elif part in E.RNG_AAI_BITS:
                code |= E.RNG_AAI_BITS[part]
            else:
                raise ValueError(
                    f"aai for RNG must be names from SH0, SH1, PS, AI, SK, got {aai!r}"
                )
        return code
    if alg == E.ALG_AES and isinstance(aai, str) and aai.upper().endswith("|DK"):
        return lookup("aai", aai[:-3], E.AES_MODES, 9) | E.AAI_DK
    return lookup("aai", aai, E.aai_table(alg) or {}, 9)
