"""Operations awaited from asyncio: started on engines that complete through a file descriptor,
else run in the loop's default executor; routed, fallen back and counted as ``Lane.run`` does."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import types
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cryptoffload.core.lane import Lane
from cryptoffload.core.ops import Op
from cryptoffload.core.validate import validate_op

if TYPE_CHECKING:
    import asyncio

__all__ = ["call", "completion_fd", "offload", "run", "starts"]

#: One engine's outcome once counted: (final, ok, value). final: the op's answer (return value
#: if ok, else raise it); not final: a decline or a fault, the next engine or software goes on.
Outcome = tuple[bool, bool, Any]

#: Software runs a symmetric op, hash or MAC of up to this many bytes on the loop's thread: the
#: hop to the default executor costs 50-150 us per op on this project's machines
#: (benchmarks/asyncio_lane.py), more than OpenSSL takes for 64 KiB of AES-GCM.
INLINE_BYTES = 64 * 1024
_BULK = frozenset({"cipher", "aead", "hash", "mac"})

#: Per event loop, the completion fds it watches and the engine each belongs to.
_watched: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, Any]] = (
    weakref.WeakKeyDictionary()
)


@functools.cache
def _asyncio() -> types.ModuleType:
    """asyncio, imported at the first awaited op (by then the program has imported it to run its
    loop): the primitives import this module, and asyncio's import would cost a program that
    does no asyncio (and `run`'s start-up) more than the rest of their imports."""
    import asyncio

    return asyncio


def starts(lane: Lane) -> bool:
    """Whether some engine on ``lane``'s route can start an op without waiting (``start``)."""
    return any(getattr(route.engine, "start", None) is not None for route in lane.routes)


def completion_fd(engine: Any) -> int | None:
    """The fd that becomes readable when ``engine`` has completions to service, or None."""
    member = getattr(engine, "completion_fd", None)
    fd = member() if callable(member) else member
    return fd if isinstance(fd, int) and not isinstance(fd, bool) and fd >= 0 else None


async def call(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in the running loop's default executor, in this task's context (so that a
    ``using`` block's provider is in force there too)."""
    loop = _asyncio().get_running_loop()
    return await loop.run_in_executor(None, contextvars.copy_context().run, fn, *args)


async def offload(
    lane: Lane, build: Callable[[], Op] | None, sync: Callable[..., Any], *args: Any
) -> Any:
    """What an API's ``*_async`` method does: when an engine on ``lane`` can start ops, the Op
    from ``build()`` (which checks the input as the sync method does) through :func:`run`;
    a symmetric op, hash or MAC of at most :data:`INLINE_BYTES` that no engine takes runs
    ``sync(*args)`` at once (software's, cheaper than a thread hop); anything else (or ``build``
    None: an input no op carries) ``sync(*args)`` in the executor."""
    if build is not None:
        if starts(lane):
            return await run(lane, build())
        op = build()
        if op.family in _BULK and op.size <= INLINE_BYTES and not _admitted(lane, op.size):
            return sync(*args)  # software's, and quicker than the hop to a thread
    return await call(sync, *args)


def _admitted(lane: Lane, size: int) -> bool:
    """Whether some engine on ``lane``'s route takes an op of ``size`` bytes."""
    return any(route.admits(size) for route in lane.routes)


async def run(lane: Lane, op: Op, checked: bool = False) -> Any:
    """:meth:`Lane.run`, awaited: ``op`` validated, then offered to each engine on the route in
    turn (started where the engine has ``start``, else its ``run`` in the executor), then to
    software in the executor; the same declines, faults, answers and counts.

    A cancelled await drops the result: the engine's outcome is still counted when it comes
    (the op was done or declined), and the op is not offered to anyone else.
    """
    if not checked:
        validate_op(op)
    loop = _asyncio().get_running_loop()
    size = op.size
    declines: dict[str, str] = {}
    for route in lane.routes:
        if lane.admits(route, size, declines):
            settle = functools.partial(_settle, lane, route, op, declines)
            final, ok, value = await _attempt(loop, route.engine, op, settle)
            if final:
                if ok:
                    return value
                raise value
    lane.allow_software(declines)  # offload required: no hop to a thread to say so
    ok, value = await loop.run_in_executor(
        None, contextvars.copy_context().run, _capture, lane.software_answer, op, declines
    )
    if ok:
        return value
    raise value


def _capture(fn: Callable[..., Any], *args: Any) -> tuple[bool, Any]:
    """(True, ``fn(*args)``) or (False, the exception it raised)."""
    try:
        return True, fn(*args)
    except Exception as exc:
        return False, exc


def _settle(
    lane: Lane, route: Any, op: Op, declines: dict[str, str], ok: bool, value: Any
) -> Outcome:
    """One engine's outcome for ``op``, counted by :meth:`Lane.settle` on whatever thread it
    arrives."""
    return lane.settle(route, op, declines, ok, value), ok, value


async def _attempt(
    loop: asyncio.AbstractEventLoop, engine: Any, op: Op, settle: Callable[[bool, Any], Outcome]
) -> Outcome:
    """One engine's counted outcome for ``op``: started (``start``) when the engine can, else
    its ``run`` in the executor (also when ``start`` gives None: that op only runs whole)."""
    start = getattr(engine, "start", None)
    if start is not None:
        try:
            pending = start(op)
        except Exception as exc:  # declined, answered or failed before it was started
            return settle(False, exc)
        if pending is not None:
            return await _awaited(loop, engine, pending, settle)
    return await loop.run_in_executor(None, _settled, settle, engine.run, op)


def _settled(settle: Callable[[bool, Any], Outcome], fn: Callable[..., Any], *args: Any) -> Outcome:
    """``fn(*args)``'s outcome, counted where it happens (so a cancelled await still counts)."""
    return settle(*_capture(fn, *args))


async def _awaited(
    loop: asyncio.AbstractEventLoop,
    engine: Any,
    pending: Any,
    settle: Callable[[bool, Any], Outcome],
) -> Outcome:
    """A started op's counted outcome: at once if it is done; through the loop watching the
    engine's completion fd if it has one; else by blocking on it in the executor."""
    if pending.done():
        return _settled(settle, pending.result)
    fd = completion_fd(engine)
    if fd is None:
        return await loop.run_in_executor(None, _settled, settle, pending.result)
    _watch(loop, engine, fd)
    future = loop.create_future()

    def done(p: Any) -> None:
        outcome = _settled(settle, p.result)
        if future.done():  # the await was cancelled: counted, dropped
            return
        if _running(loop):
            future.set_result(outcome)
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(_deliver, future, outcome)

    pending.add_done_callback(done)
    return await future


def _deliver(future: asyncio.Future[Outcome], outcome: Outcome) -> None:
    if not future.done():
        future.set_result(outcome)


def _running(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this thread is running ``loop``."""
    try:
        return _asyncio().get_running_loop() is loop
    except RuntimeError:
        return False


def _watch(loop: asyncio.AbstractEventLoop, engine: Any, fd: int) -> None:
    """``loop`` calls ``engine.service()`` whenever ``fd`` is readable (registered once)."""
    fds = _watched.get(loop)
    if fds is None:
        fds = _watched[loop] = {}
    if fds.get(fd) is engine:
        return
    if fd in fds:  # the number now belongs to another engine: the old one closed it
        loop.remove_reader(fd)
    loop.add_reader(fd, engine.service)
    fds[fd] = engine
