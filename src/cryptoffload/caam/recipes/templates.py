"""Shared descriptors cached per (operation, key) and job descriptors patched from templates."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.recipes.base import DriverLike

__all__ = ["JobTemplate", "job_header", "seq_flags", "seq_job", "shared", "template"]

WORD = 0xFFFF_FFFF


# ---------------------------------------------------------------------- shared descriptors

#: Shared descriptor lengths by shape (everything in the cache key but the key's id): the
#: shape fixes the length, and the job header needs it even when the cache had the descriptor.
_LENGTHS: dict[Hashable, int] = {}


def shared(
    driver: DriverLike,
    shape: tuple[Hashable, ...],
    ident: bytes | None,
    build: Callable[[DescriptorBuilder], None],
) -> tuple[int, int]:
    """(bus address, length in words) of the shared descriptor for ``shape`` and key ``ident``
    (cache key ("recipe", *shape, pointer size[, ident])), built by ``build(builder)`` when the
    driver's cache lacks it. Call it once the inputs are checked: the driver pins what it hands
    out until a job that points at it is submitted."""
    made: list[int] = []

    def words() -> list[int]:
        b = driver.builder()
        build(b)
        made[:] = b.words()
        return list(made)

    full = ("recipe", *shape, driver.pointer_size)
    phys = driver.shared(full if ident is None else (*full, ident), words)
    length = _LENGTHS.get(full)
    if made:
        length = _LENGTHS[full] = len(made)
    elif length is None:  # cached by another copy of this module: build once to learn it
        length = _LENGTHS[full] = len(words())
    return phys, length


# ---------------------------------------------------------------------- job templates


class JobTemplate:
    """A job descriptor's words with its few variable positions, filled in per job."""

    __slots__ = ("_slots", "_words")

    def __init__(self, words: list[int], slots: tuple[tuple[tuple[int, int], ...], ...]) -> None:
        self._words = words
        self._slots = slots

    @classmethod
    def make(
        cls,
        pointer_size: int,
        fields: Sequence[tuple[str, str]],
        build: Callable[[dict[str, int]], list[int]],
    ) -> JobTemplate:
        """Build once with a sentinel for each (name, "ptr" | "word") field, then find them.

        Sentinels are 0xDEADxxxx words: no command has that opcode (0x1B), and a job template
        holds no other immediate data than its fields.
        """
        values: dict[str, int] = {}
        for i, (name, kind) in enumerate(fields):
            tag = 0xDEAD0000 | i << 4
            if kind == "ptr" and pointer_size == 8:
                values[name] = (tag | 1) << 32 | (tag | 2)
            else:
                values[name] = tag | 3
        words = build(values)
        slots = []
        for name, _ in fields:
            value = values[name]
            parts = [(value >> 32, 32), (value & WORD, 0)] if value >> 32 else [(value, 0)]
            found = []
            for sentinel, shift in parts:
                if words.count(sentinel) != 1:
                    raise RuntimeError(f"template field {name} not found once")
                found.append((words.index(sentinel), shift))
            slots.append(tuple(found))
        return cls(words, tuple(slots))

    @property
    def slots(self) -> tuple[tuple[tuple[int, int], ...], ...]:
        """Per field, in the order given to ``make``: its (word index, shift) pairs, the most
        significant word first."""
        return self._slots

    def fill(self, *values: int) -> list[int]:
        """The words with the fields, in the order given to ``make``, set to ``values``."""
        words = self._words.copy()
        for slots, value in zip(self._slots, values, strict=True):
            for index, shift in slots:
                words[index] = value >> shift & WORD
        return words


_TEMPLATES: dict[Hashable, JobTemplate] = {}


def template(
    key: Hashable,
    pointer_size: int,
    fields: Sequence[tuple[str, str]],
    build: Callable[[dict[str, int]], list[int]],
) -> JobTemplate:
    """The cached template ``key`` (made on first use)."""
    found = _TEMPLATES.get(key)
    if found is None:
        found = _TEMPLATES[key] = JobTemplate.make(pointer_size, fields, build)
    return found


def job_header(pointer_size: int, shlen: int, sentinel: int) -> DescriptorBuilder:
    """The kernel's job header for a shared descriptor: SHARED | REVERSE | DEFER."""
    b = DescriptorBuilder(long_pointers=pointer_size == 8)
    return b.header(shared_pointer=sentinel, shared_length=shlen, reverse=True, share="defer")


def seq_flags(sgf: bool) -> tuple[str, ...]:
    """The kernel always writes the EXT form (a 32-bit length word)."""
    return ("SGF", "EXT") if sgf else ("EXT",)


def seq_job(
    driver: DriverLike, shlen: int, *, seq_in: bool | None, seq_out: bool | None
) -> JobTemplate:
    """Header + shared pointer, then SEQ IN PTR and SEQ OUT PTR (None: left out; True: SGF).

    Fields, in order: shared, then in pointer and length, then out pointer and length.
    """
    fields = [("shared", "ptr")]
    if seq_in is not None:
        fields += [("in", "ptr"), ("in_len", "word")]
    if seq_out is not None:
        fields += [("out", "ptr"), ("out_len", "word")]

    def build(v: dict[str, int]) -> list[int]:
        b = job_header(driver.pointer_size, shlen, v["shared"])
        if seq_in is not None:
            b.seq_in_ptr(pointer=v["in"], length=v["in_len"], flags=seq_flags(seq_in))
        if seq_out is not None:
            b.seq_out_ptr(pointer=v["out"], length=v["out_len"], flags=seq_flags(seq_out))
        return b.words()

    key = ("seq", driver.pointer_size, shlen, seq_in, seq_out)
    return template(key, driver.pointer_size, fields, build)
