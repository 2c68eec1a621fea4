"""The device's temporary directory: who holds it, and wiping and removing it once they are gone.

Ownership is a shared ``flock`` on the directory's ``lock`` file, taken by the caller that made
the directory (``make``), by the device process (``hold``) and inherited by the caller's forked
children: the kernel drops it when the last of them exits, however it died, so a later device
start that takes it exclusively (``sweep``) knows nobody uses the directory any more. Process
ids are not used: they are reused. The lock file appears under its name already locked, so a
directory without one is still being made (or was made before locks): it is never swept.

The device file holds what the jobs left in the pool (keys among it): its data is overwritten
with zeros before it is unlinked whenever nobody else can still map it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tempfile

__all__ = ["LOCK", "MEMORY", "PREFIX", "hold", "leave", "make", "sweep", "wipe"]

PREFIX = "caam-device-"
LOCK = "lock"
MEMORY = "memory"
_ZEROS = memoryview(bytes(1 << 20))


def make(base: str | None) -> tuple[str, int]:
    """A new directory under ``base`` (the system's temporary directory for None) and the fd
    that holds its lock: keep it open while the directory is in use."""
    directory = tempfile.mkdtemp(prefix=PREFIX, dir=base)
    try:
        unnamed = os.path.join(directory, ".lock-new")
        fd = os.open(unnamed, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            os.rename(unnamed, os.path.join(directory, LOCK))
        except BaseException:
            os.close(fd)
            raise
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return directory, fd


def _device_directory(memory: str) -> str | None:
    directory = os.path.dirname(os.path.abspath(memory))
    return directory if os.path.basename(directory).startswith(PREFIX) else None


def hold(memory: str) -> int | None:
    """The device's own shared hold on the directory of its file ``memory``, or None when that
    is not a device directory with a lock (a file named by hand) or the lock is being taken
    away (its owners are gone and a sweep removes it)."""
    directory = _device_directory(memory)
    if directory is None:
        return None
    try:
        fd = os.open(os.path.join(directory, LOCK), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def leave(memory: str, fd: int | None) -> None:
    """An orphaned device's last act: drop its hold, wipe the file when nobody else holds the
    directory (a forked child of the dead caller may still map the pool), remove it."""
    directory = _device_directory(memory)
    if fd is not None:
        os.close(fd)
    if directory is None:
        return
    alone = _take(directory)
    try:
        if alone is not None:
            wipe(os.path.join(directory, MEMORY))
        shutil.rmtree(directory, ignore_errors=True)
    finally:
        if alone is not None:
            os.close(alone)


def sweep(base: str | None) -> list[str]:
    """Wipe and remove this user's device directories under ``base`` whose holders are all
    gone (a caller and its device killed together); the directories removed."""
    base = base or tempfile.gettempdir()
    removed: list[str] = []
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(PREFIX)]
    except OSError:
        return removed
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            continue
        fd = _take(entry.path)
        if fd is None:
            continue
        try:
            wipe(os.path.join(entry.path, MEMORY))
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
        finally:
            os.close(fd)
    return removed


def _take(directory: str) -> int | None:
    """The directory's lock held exclusively (nobody else holds it), or None."""
    path = os.path.join(directory, LOCK)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        now = os.lstat(path)  # still this directory's lock, not one another remover unlinked
        mine = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino):
            raise FileNotFoundError(path)
    except OSError:
        os.close(fd)
        return None
    return fd


def wipe(path: str) -> None:
    """Overwrite the data of the file at ``path`` with zeros; its holes stay holes (a sparse
    device file is not filled in). Nothing when it is missing or cannot be opened."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        size = os.fstat(fd).st_size
        at = 0
        while at < size:
            try:
                start = os.lseek(fd, at, os.SEEK_DATA)
            except OSError:  # no data after ``at`` (ENXIO), or no SEEK_DATA here
                break
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
            while start < end:
                start += os.pwrite(fd, _ZEROS[: min(len(_ZEROS), end - start)], start)
            at = end
    except OSError:
        pass
    finally:
        os.close(fd)
