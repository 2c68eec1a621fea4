"""The device's temporary directory: held by a lock while any owner lives, swept and wiped once
they are all gone, never while one holds it; the wipe zeroes the data and keeps the holes."""

from __future__ import annotations

import os

from cryptoffload.caam.device import workdir

SECRET = bytes.fromhex("5ec7e75ec7e75ec7e75ec7e75ec7e75e") * 4
SIZE = 32 << 20


def _sparse_with_secrets(path: str) -> list[int]:
    offsets = [0x1000, SIZE - 0x3000]
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.ftruncate(fd, SIZE)
        for at in offsets:
            os.pwrite(fd, SECRET, at)
    finally:
        os.close(fd)
    return offsets


def test_wipe_zeroes_the_data_and_leaves_the_holes(tmp_path):
    path = str(tmp_path / "memory")
    offsets = _sparse_with_secrets(path)
    with open(path, "rb") as f:  # a file system that shows no holes has the whole file wiped
        shows_holes = os.lseek(f.fileno(), 0, os.SEEK_HOLE) < SIZE
    workdir.wipe(path)
    with open(path, "rb") as f:
        for at in offsets:
            f.seek(at)
            assert f.read(len(SECRET)) == bytes(len(SECRET))
    st = os.stat(path)
    assert st.st_size == SIZE
    if shows_holes:
        assert st.st_blocks * 512 < SIZE // 4  # not filled in


def test_sweep_removes_only_the_directories_nobody_holds(tmp_path):
    held, held_fd = workdir.make(str(tmp_path))
    free, free_fd = workdir.make(str(tmp_path))
    memory = os.path.join(free, workdir.MEMORY)
    offsets = _sparse_with_secrets(memory)
    kept = os.open(memory, os.O_RDONLY)  # the bytes stay readable after the unlink
    os.close(free_fd)
    unlocked = tmp_path / "caam-device-unlocked"  # being made, or from before locks
    unlocked.mkdir()
    (tmp_path / "unrelated").mkdir()
    try:
        assert workdir.sweep(str(tmp_path)) == [free]
        assert not os.path.exists(free)
        assert all(os.pread(kept, len(SECRET), at) == bytes(len(SECRET)) for at in offsets)
        assert os.path.isdir(held) and unlocked.is_dir() and (tmp_path / "unrelated").is_dir()
        assert workdir.sweep(str(tmp_path)) == []
    finally:
        os.close(kept)
        os.close(held_fd)
    assert workdir.sweep(str(tmp_path)) == [held]


def test_a_forked_child_keeps_the_directory_held_until_it_exits(tmp_path):
    directory, fd = workdir.make(str(tmp_path))
    go_on, release = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: holds the inherited lock until told to exit
        os.close(release)
        os.read(go_on, 1)
        os._exit(0)
    os.close(go_on)
    os.close(fd)
    try:
        assert workdir.sweep(str(tmp_path)) == [] and os.path.isdir(directory)
    finally:
        os.write(release, b"x")
        os.close(release)
        os.waitpid(pid, 0)
    assert workdir.sweep(str(tmp_path)) == [directory]


def test_the_device_holds_its_directory_too(tmp_path):
    directory, fd = workdir.make(str(tmp_path))
    memory = os.path.join(directory, workdir.MEMORY)
    _sparse_with_secrets(memory)
    device = workdir.hold(memory)
    assert device is not None
    os.close(fd)  # the caller gone: the device still holds it
    assert workdir.sweep(str(tmp_path)) == []
    os.close(device)
    assert workdir.sweep(str(tmp_path)) == [directory]


def test_a_file_named_by_hand_is_nobody_s_directory(tmp_path):
    memory = str(tmp_path / "memory")
    _sparse_with_secrets(memory)
    assert workdir.hold(memory) is None
    workdir.leave(memory, None)
    assert os.path.exists(memory)


def test_an_orphaned_device_leaving_wipes_only_when_nobody_else_holds_the_directory(tmp_path):
    for others in (False, True):
        directory, caller = workdir.make(str(tmp_path))
        memory = os.path.join(directory, workdir.MEMORY)
        offsets = _sparse_with_secrets(memory)
        kept = os.open(memory, os.O_RDONLY)
        device = workdir.hold(memory)
        if not others:
            os.close(caller)
        try:
            workdir.leave(memory, device)
            assert not os.path.exists(directory)
            # A forked child of the dead caller may still map the pool: not wiped under it.
            want = SECRET if others else bytes(len(SECRET))
            assert all(os.pread(kept, len(SECRET), at) == want for at in offsets)
        finally:
            os.close(kept)
            if others:
                os.close(caller)
