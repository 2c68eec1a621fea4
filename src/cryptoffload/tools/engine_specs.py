"""Engine lists on the command line: ``--engines software,caam:model=t2080,seed=01`` as specs,
the same in every command (``run`` too, which must start without loading the others)."""

from __future__ import annotations


def comma_list(text: str) -> list[str]:
    """Comma-separated items; commas inside parentheses stay, so a kernel template driver
    such as ``afalg:gcm_base(ctr(aes-generic),ghash-generic)`` is one item."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def engine_list(text: str) -> list[str]:
    """An argparse type for ``--engines``, the same in every command: a :func:`comma_list` of
    engine specs (an item ``key=value`` continues the spec before it), at least one (an empty
    list is a usage error, not "the engines found")."""
    items: list[str] = []
    for item in comma_list(text):
        # ``key=value`` with no ``kind:`` before it is the previous spec's next option
        # (``synthetic:latency=20us,throughput=2GiB/s``, ``caam:model=t2080,seed=01``).
        if items and ":" in items[-1] and "=" in item.split(":", 1)[0]:
            items[-1] += "," + item
        else:
            items.append(item)
    if not items:
        import argparse  # here: `run` reads its options without it when it can (start-up time)

        raise argparse.ArgumentTypeError(
            f"no engine named in --engines: expected a comma-separated list of engine specs "
            f"(e.g. software,afalg:any), got {text!r}"
        )
    return items
