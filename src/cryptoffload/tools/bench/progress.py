"""A progress bar on stderr while a benchmark runs, the library's fallback warning held back."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@contextlib.contextmanager
def progress_on_stderr(total: int, quiet: bool) -> Iterator[Callable[[str], None]]:
    """Yield ``step(description)``, called before each of ``total`` steps; no bar if ``quiet``."""
    with _fallback_warning_held():
        if quiet:
            yield lambda description: None
        else:
            with _bar(total) as step:
                yield step


@contextlib.contextmanager
def _fallback_warning_held() -> Iterator[None]:
    """The bench reports declines per row; the library's one-line warning would interleave."""
    logger = logging.getLogger("cryptoffload")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


@contextlib.contextmanager
def _bar(total: int) -> Iterator[Callable[[str], None]]:
    bar = Progress(
        TextColumn("{task.description:<44}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    bar.start()
    task = bar.add_task("starting", total=total)
    started = False

    def step(description: str) -> None:
        nonlocal started
        if started:
            bar.advance(task)
        started = True
        bar.update(task, description=description)

    try:
        yield step
    finally:
        bar.stop()
