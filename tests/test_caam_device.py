"""The CAAM model as a device process: the board transport over its file, posted register
writes, timed DECOs, interrupt completion, and what happens when the device dies or hangs.

Every test starts its own device process and stops it (``_no_leftover`` checks the pid is gone).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM as ReferenceGCM

import cryptoffload
from cryptoffload import Provider
from cryptoffload.aead import AESGCM
from cryptoffload.caam import regs
from cryptoffload.caam.device.process import DeviceProcess
from cryptoffload.caam.driver import Driver, Job, RingTimeout
from cryptoffload.caam.recipes import aead
from cryptoffload.caam.recipes import hash as mdha
from cryptoffload.engines import from_spec
from cryptoffload.engines.caam import CaamEngine
from cryptoffload.errors import BadEngineSpec

ALL = cryptoffload.Policy(min_size={"*": 0})
KEY, NONCE = bytes(range(16)), bytes(range(12))


def _gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie child still answers kill(pid, 0): reap it if it is ours
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.02)
    return False


@pytest.fixture
def device(request: pytest.FixtureRequest) -> Iterator[DeviceProcess]:
    part, kwargs = getattr(request, "param", ("t2080", {}))
    dev = DeviceProcess.start(part, **kwargs)
    yield dev
    dev.stop()
    assert _gone(dev.pid), f"device process {dev.pid} outlived its test"
    assert not os.path.exists(dev.directory)


def _driver(dev: DeviceProcess, **kwargs: object) -> tuple[Driver, object]:
    transport = dev.transport()
    complete = kwargs.pop("complete", "irq")
    driver = Driver(transport, complete=complete, irq=transport.irq, **kwargs)  # type: ignore[arg-type]
    return driver, transport


@pytest.mark.parametrize(
    "device", [("t2080", {}), ("imx7d", {})], indirect=True, ids=["t2080", "imx7d"]
)
@pytest.mark.parametrize("complete", ["poll", "irq"])
def test_driver_over_the_device_file_gives_softwares_gcm_and_sha(device, complete):
    driver, transport = _driver(device, complete=complete)
    try:
        assert driver.caps.byteorder == device.layout.byteorder
        for n in (0, 64, 1408, 16384):
            data = os.urandom(n)
            got = aead.gcm_encrypt(driver, KEY, NONCE, data, b"aad")
            assert got == ReferenceGCM(KEY).encrypt(NONCE, data, b"aad")
        import hashlib

        assert mdha.digest(driver, "sha256", b"abc" * 999) == hashlib.sha256(b"abc" * 999).digest()
        f = driver.figures
        assert f["complete"] == complete
        assert (f["interrupts"] > 0) == (complete == "irq")
        assert device.figures()["jobs"] == f["jobs"]
    finally:
        driver.close()
        transport.close()


def test_posted_writes_are_applied_in_order_and_a_read_sees_them(device):
    driver, transport = _driver(device, complete="poll")
    try:
        ring = driver._ring
        base = regs.jr_base(0)
        # Ten IRJAR=1 writes back to back, no register read in between: no job is lost.
        preps = [mdha.prepare_digest(driver, "sha1", bytes([i])) for i in range(10)]
        jobs = []
        with driver._lock:
            for p in preps:
                job = Job(driver, p.buffers.owned, p.buffers.collect)
                driver._place_one(job, p.words, driver.pack(p.words))
                jobs.append(job)
        assert [j.wait() for j in jobs] == [0] * 10
        import hashlib

        assert [j.outputs[0] for j in jobs] == [
            hashlib.sha1(bytes([i])).digest() for i in range(10)
        ]
        # A read right after ORJRR reflects it: ORSFR is 0 once every completion is removed.
        assert transport.read32(base + regs.ORSFR) == 0
        assert ring.room() == driver.depth
    finally:
        driver.close()
        transport.close()


@pytest.mark.parametrize("device", [("t2080", {"throughput": 2e5})], indirect=True)
def test_a_short_job_started_after_a_long_one_completes_first(device):
    driver, transport = _driver(device)
    try:
        long_job = aead.prepare_gcm(driver, KEY, NONCE, bytes(40000), b"", encrypt=True)
        short = aead.prepare_gcm(driver, KEY, NONCE, b"s", b"", encrypt=True)
        started = time.monotonic()
        first, second = driver.submit_many([long_job.request(), short.request()])
        assert second.wait() == 0 and not first.done  # 40 kB at 200 kB/s: 200 ms on its DECO
        assert first.wait() == 0
        assert time.monotonic() - started >= 0.15
    finally:
        driver.close()
        transport.close()


def test_the_device_times_each_job_and_reports_its_figures(device):
    driver, transport = _driver(device)
    try:
        for _ in range(4):
            aead.gcm_encrypt(driver, KEY, NONCE, bytes(16384), b"")
        f = device.figures()
        assert f["jobs"] >= 4 and f["bytes"] >= 4 * 16384
        per_job = f["modelled_s"] / f["jobs"]
        assert per_job >= 3.5e-6  # the fixed cost at least
        assert f["compute_s"] > 0 and f["busy_s"] >= f["modelled_s"] / 4  # 4 DECOs at most
        assert f["interrupts"] >= 1  # fewer than jobs when a wait found its job already back
    finally:
        driver.close()
        transport.close()


def test_completion_fd_becomes_readable_and_service_reaps(device):
    import select

    driver, transport = _driver(device)
    try:
        fd = driver.completion_fd
        assert isinstance(fd, int)
        assert driver.service() == 0  # nothing pending: harmless
        job = driver.submit_many([mdha.prepare_digest(driver, "sha256", b"abc").request()])[0]
        readable, _, _ = select.select([fd], [], [], 2.0)
        assert readable
        reaped = 0
        deadline = time.monotonic() + 2
        while not job.done and time.monotonic() < deadline:
            reaped += driver.service()
        assert job.done and reaped == 1
    finally:
        driver.close()
        transport.close()
    polling, transport = _driver(device, complete="poll")
    assert polling.completion_fd is None
    polling.close()
    transport.close()


def test_a_thread_waiting_on_the_interrupt_wakes_when_another_thread_services_its_job(device):
    # An event loop servicing the completion fd takes the interrupt a thread sleeping in the
    # driver's wait was also waiting for (``encrypt_many`` in the loop's executor beside
    # ``encrypt_async``): that thread must learn at once that its job was reaped, not at the
    # end of its quarter-second sleep.
    driver, transport = _driver(device)
    stop = threading.Event()

    def servicing() -> None:
        import select

        while not stop.is_set():
            if select.select([driver.completion_fd], [], [], 0.05)[0]:
                driver.service()

    loop = threading.Thread(target=servicing)
    loop.start()
    try:
        start = time.monotonic()
        for i in range(20):
            req = mdha.prepare_digest(driver, "sha256", bytes([i]) * 64).request()
            assert driver.submit_many([req])[0].wait() == 0
        elapsed = time.monotonic() - start
    finally:
        stop.set()
        loop.join()
        driver.close()
        transport.close()
    assert elapsed < 1.0, f"20 jobs took {elapsed:.2f} s: the waiter slept through its wake-up"


def test_batches_coalesce_interrupts(device):
    driver, transport = _driver(device, coalesce=(8, 2000))
    try:
        reqs = [mdha.prepare_digest(driver, "sha256", bytes([i]) * 100) for i in range(32)]
        jobs = driver.submit_many([r.request() for r in reqs])
        assert all(j.wait() == 0 for j in jobs)
        assert driver.figures["interrupts"] < 32
    finally:
        driver.close()
        transport.close()


@pytest.mark.parametrize("device", [("t2080", {"faults": ("hang",)})], indirect=True)
def test_a_device_that_never_interrupts_times_out_resets_and_software_answers(device):
    driver, transport = _driver(device, timeout=0.3)
    try:
        started = time.monotonic()
        job = driver.submit_many([mdha.prepare_digest(driver, "sha256", b"abc").request()])[0]
        with pytest.raises(RingTimeout):
            job.wait()
        assert time.monotonic() - started < 2
        assert driver.figures["ring_resets"] == 1 and driver.figures["timeouts"] == 1
    finally:
        driver.close()
        transport.close()
    # Through the engine: every op gives software's answer.
    engine = CaamEngine("caam:device-hang", device.transport, timeout=0.3)
    provider = Provider([engine], policy=ALL)
    try:
        data = b"d" * 100
        assert AESGCM(KEY, provider=provider).encrypt(NONCE, data, b"") == ReferenceGCM(
            KEY
        ).encrypt(NONCE, data, b"")
        cell = provider.counters.snapshot()[engine.name]["aes-128-gcm"]
        assert cell["ops"] == 0 and cell["faults"] + sum(cell["declined"].values()) == 1
    finally:
        provider.close()


@pytest.mark.parametrize(
    "device", [("t2080", {"faults": ("noirq",), "latency": 0.3})], indirect=True
)
def test_completions_without_interrupt_are_found_by_the_reset_after_the_timeout(device):
    driver, transport = _driver(device, timeout=0.1)
    try:
        job = driver.submit_many([mdha.prepare_digest(driver, "sha256", b"abc").request()])[0]
        assert job.wait() == 0  # reaped by the recovery: the completion was in the ring
        assert driver.figures["ring_resets"] == 1 and driver.figures["interrupts"] == 0
    finally:
        driver.close()
        transport.close()


def _engine_provider(spec: str = "caam:device=t2080") -> tuple[Provider, CaamEngine]:
    provider = Provider([spec], policy=ALL)
    engine = provider.engines[0]
    assert engine.probe().available
    return provider, engine


def test_the_spec_starts_the_device_and_close_stops_it():
    provider, engine = _engine_provider("caam:device=imx7d,latency=0,complete=poll")
    pid = engine._transport.device.pid
    assert engine.probe().detail["completion"] == "poll"
    assert _gone(pid)  # the second probe stopped the first device
    pid = engine._transport.device.pid
    provider.close()
    assert _gone(pid)


@pytest.mark.parametrize(
    "spec",
    [
        "caam:device=t9999",
        "caam:device=t2080,latency=-1",
        "caam:device=t2080,throughput=0",
        "caam:device=t2080,pool=1000",
        "caam:device=t2080,complete=sometimes",
        "caam:device=t2080,seed=00",
        "caam:model=t2080,complete=irq",
    ],
)
def test_bad_device_specs_are_refused_before_any_process_starts(spec):
    with pytest.raises(BadEngineSpec):
        from_spec(spec)


def test_the_device_killed_mid_run_leaves_software_answering_and_the_engine_unavailable():
    provider, engine = _engine_provider()
    pid = engine._transport.device.pid
    results: list[bool] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def work(seed: int) -> None:
        try:
            i = 0
            while not stop.is_set():
                i += 1
                data = bytes([seed, i & 0xFF]) * 700
                got = AESGCM(KEY, provider=provider).encrypt(NONCE, data, b"")
                results.append(got == ReferenceGCM(KEY).encrypt(NONCE, data, b""))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    before = len(results)
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(20)
    try:
        assert not any(t.is_alive() for t in threads), "a caller hung"
        assert before > 0 and len(results) > before
        assert not errors and all(results)
        snap = provider.counters.snapshot()[engine.name]["aes-128-gcm"]
        assert snap["faults"] >= 1
        assert engine.figures["device_lost"] == 1
        with pytest.raises(cryptoffload.errors.Unavailable, match="device process exited"):
            engine.run(_gcm_op())
    finally:
        provider.close()
    assert _gone(pid)


def _gcm_op():
    from cryptoffload.core.ops import make

    return make(
        "aead", "aes-128-gcm", "encrypt", key=KEY, iv=NONCE, data=b"x", aad=b"", tag_length=16
    )


def test_many_threads_share_the_ring_with_exact_counts():
    provider, engine = _engine_provider()
    try:
        n_threads, per_thread = 6, 12
        bad: list[int] = []

        def work(seed: int) -> None:
            for i in range(per_thread):
                data = bytes([seed]) * (64 + i)
                if AESGCM(KEY, provider=provider).encrypt(NONCE, data, b"") != ReferenceGCM(
                    KEY
                ).encrypt(NONCE, data, b""):
                    bad.append(seed)

        threads = [threading.Thread(target=work, args=(s,)) for s in range(n_threads)]
        jobs_before = engine.figures["jobs"]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not bad
        total = n_threads * per_thread
        assert provider.counters.snapshot()[engine.name]["aes-128-gcm"]["ops"] == total
        assert engine.figures["jobs"] - jobs_before == total
        figures = engine.figures
        assert figures["device"]["jobs"] == figures["jobs"]
    finally:
        provider.close()


def test_a_forked_child_never_uses_the_parents_ring_or_stops_its_device():
    provider, engine = _engine_provider()
    try:
        pid = os.fork()
        if pid == 0:  # the child: software answers, the engine declines, nothing is stopped
            code = 1
            try:
                data = b"child" * 10
                ok = AESGCM(KEY, provider=provider).encrypt(NONCE, data, b"") == ReferenceGCM(
                    KEY
                ).encrypt(NONCE, data, b"")
                snap = provider.counters.snapshot()[engine.name]["aes-128-gcm"]
                code = 0 if ok and snap["ops"] == 0 else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert engine._transport.device.alive()
        data = b"parent" * 10
        assert AESGCM(KEY, provider=provider).encrypt(NONCE, data, b"") == ReferenceGCM(
            KEY
        ).encrypt(NONCE, data, b"")
        assert provider.counters.snapshot()[engine.name]["aes-128-gcm"]["ops"] == 1
    finally:
        provider.close()


def test_the_device_dies_with_its_parent():
    script = (
        "import sys, time\n"
        "from cryptoffload.caam.device.process import DeviceProcess\n"
        "d = DeviceProcess.start('t2080')\n"
        "print(d.pid, d.directory, flush=True)\n"
        "time.sleep(60)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env)
    try:
        line = parent.stdout.readline().split()
        pid = int(line[0])
        parent.kill()
        parent.wait(5)
        assert _gone(pid), "the device outlived its killed parent"
        directory = line[1].decode()
        deadline = time.monotonic() + 5
        while os.path.exists(directory) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not os.path.exists(directory), "the orphaned device left its directory"
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.stdout.close()


def test_the_command_line_runs_a_device_over_a_socket_path(tmp_path):
    import socket

    from cryptoffload.caam.device.layout import create, layout_for

    layout = layout_for("t2080")
    memory = str(tmp_path / "memory")
    create(memory, layout)
    path = str(tmp_path / "irq")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cryptoffload.caam.device",
            "--part",
            "t2080",
            "--memory",
            memory,
            "--irq",
            path,
        ],
        env=env,
    )
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        deadline = time.monotonic() + 10
        while True:
            try:
                sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                assert time.monotonic() < deadline
                time.sleep(0.02)
        sock.close()  # the driver's end closing ends the device
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- issue 30, point 11: pool= is checked against what the device can map, before it starts ----


@pytest.mark.parametrize(
    ("spec", "end", "largest"),
    [
        ("caam:device=t2080,pool=99999g", "0xfe300000, its register block", "2051m"),
        ("caam:device=t1040,latency=0,pool=3g", "0xfe300000, its register block", "2051m"),
        ("caam:device=imx7d,pool=2g", "0x100000000, the top of its 32-bit addresses", "1280m"),
    ],
)
def test_a_pool_the_device_cannot_map_is_refused_naming_the_size_and_what_fits(spec, end, largest):
    asked = spec.rsplit("pool=", 1)[1]
    with pytest.raises(BadEngineSpec) as info:
        from_spec(spec)
    message = str(info.value)
    assert f"pool={asked} (" in message and end in message
    assert message.endswith(f"give pool= at most {largest}")


def test_the_largest_pool_the_device_can_map_is_taken_and_serves():
    provider, engine = _engine_provider("caam:device=imx7d,latency=0,pool=1280m")
    try:
        data = bytes(range(256)) * 8
        got = AESGCM(KEY, provider=provider).encrypt(NONCE, data, b"")
        assert got == ReferenceGCM(KEY).encrypt(NONCE, data, b"")
        assert provider.counters.snapshot()[engine.name]["aes-128-gcm"]["ops"] == 1
    finally:
        provider.close()


def test_no_device_process_starts_with_a_pool_over_its_register_block():
    with pytest.raises(ValueError, match="register block"):
        DeviceProcess.start("t2080", pool=3 << 30)


def test_bench_with_a_pool_too_large_is_one_line_and_exit_2(capfd):
    from cli_calls import run_cli

    code, out, err = run_cli(
        capfd, "bench", "--engine", "caam:device=t2080,pool=99999g", "--algs", "sha256", "--quiet"
    )
    assert code == 2 and out == ""
    assert err.startswith("cryptoffload bench: caam option pool=99999g (") and err.count("\n") == 1


def _device_command(memory: str, irq: str, **popen: object) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    argv = [sys.executable, "-m", "cryptoffload.caam.device", "--part", "t2080"]
    argv += ["--memory", memory, "--irq", irq]
    return subprocess.Popen(argv, env=env, text=True, **popen)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    "memory, irq, words",
    [
        ("{tmp}", "{tmp}/irq", "is a directory"),
        ("{tmp}/small", "{tmp}/irq", "holds 10 bytes"),
        ("{tmp}/no/such/dir/memory", "{tmp}/irq", "cannot make the device file"),
        ("/dev/null", "{tmp}/irq", "not a regular file"),
        ("{tmp}/memory", "999", "--irq 999"),
        ("{tmp}/memory", "{tmp}/small", "--irq {tmp}/small"),
    ],
    ids=["directory", "short-file", "no-parent", "device-node", "closed-fd", "taken-path"],
)
def test_the_command_line_refuses_a_memory_or_irq_it_cannot_use_with_a_clear_error(
    tmp_path, memory, irq, words
):
    (tmp_path / "small").write_bytes(bytes(10))
    memory, irq, words = (s.replace("{tmp}", str(tmp_path)) for s in (memory, irq, words))
    proc = _device_command(memory, irq, stderr=subprocess.PIPE)
    try:
        _, err = proc.communicate(timeout=30)  # never waits for a driver on --irq first
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 2, err
    assert "Traceback" not in err and words in err, err
    assert os.listdir(tmp_path) == ["small"]  # no device file or socket file left behind
    assert (tmp_path / "small").read_bytes() == bytes(10)


def test_a_device_file_that_cannot_be_sized_is_not_left_half_made(tmp_path, monkeypatch):
    import errno

    from cryptoffload.caam.device.layout import create, layout_for

    def too_large(fd: int, size: int) -> None:
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))

    monkeypatch.setattr(os, "ftruncate", too_large)
    with pytest.raises(OSError, match="too large"):
        create(str(tmp_path / "memory"), layout_for("t2080"))
    assert os.listdir(tmp_path) == []


def _ready(memory: str) -> bool:
    from cryptoffload.caam.device.layout import Control, layout_for

    layout = layout_for("t2080")
    at = layout.control - layout.origin + 8 * Control.READY
    with open(memory, "rb") as f:
        f.seek(at)
        return f.read(8) != bytes(8)


@pytest.mark.parametrize("connected", [False, True], ids=["listening", "serving"])
def test_sigterm_ends_the_command_line_device_and_removes_its_socket_file(tmp_path, connected):
    import socket

    memory, path = str(tmp_path / "memory"), str(tmp_path / "irq")
    proc = _device_command(memory, path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(path):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        if connected:
            while True:
                try:
                    sock.connect(path)
                    break
                except (FileNotFoundError, ConnectionRefusedError):
                    assert time.monotonic() < deadline
                    time.sleep(0.02)
            while not _ready(memory):
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert not os.path.exists(path), "the device left its --irq socket file"
    finally:
        sock.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- the device's directory: swept once its owners are gone, never while one lives -------------

#: A stand-in for the keys a job leaves in the pool.
SECRET = bytes.fromhex("5ec7e75ec7e75ec7e75ec7e75ec7e75e") * 4


def _pool_offset(part: str = "t2080") -> int:
    from cryptoffload.caam.device.layout import layout_for

    layout = layout_for(part)
    return layout.pool - layout.origin + 0x1000


def _new_device(base: str) -> DeviceProcess:
    from cryptoffload.caam.device.layout import layout_for

    dev = DeviceProcess(layout_for("t2080"), directory=base)
    dev.wait_ready()
    return dev


def _caller_of_a_device(start: str) -> subprocess.Popen[bytes]:
    """A process that starts a device with ``start`` (code that binds ``d``), prints the
    device's pid and directory, and waits to be killed."""
    script = (
        "import time\n"
        "from cryptoffload.caam.device.process import DeviceProcess\n"
        f"{start}"
        "print(d.pid, d.directory, flush=True)\n"
        "time.sleep(60)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env)


def test_a_new_device_sweeps_and_wipes_the_directory_of_a_device_killed_with_its_caller(
    tmp_path,
):
    caller = _caller_of_a_device(
        "from cryptoffload.caam.device.layout import layout_for\n"
        f"d = DeviceProcess(layout_for('t2080'), directory={str(tmp_path)!r})\n"
        "d.wait_ready()\n"
    )
    try:
        pid_text, directory = caller.stdout.readline().decode().split()
        memory = os.path.join(directory, "memory")
        fd = os.open(memory, os.O_RDWR)  # kept: the bytes stay readable after the unlink
        os.pwrite(fd, SECRET, _pool_offset())
        os.kill(int(pid_text), signal.SIGKILL)  # the device first: it would clean up after
        caller.kill()  # a caller's death, but not after its own
        caller.wait(5)
        assert _gone(int(pid_text))
        assert os.path.isdir(directory)
        fresh = _new_device(str(tmp_path))
        try:
            assert not os.path.exists(directory), "the orphaned directory was not swept"
            assert os.pread(fd, len(SECRET), _pool_offset()) == bytes(len(SECRET))
            assert os.path.isdir(fresh.directory)
        finally:
            fresh.stop()
            os.close(fd)
    finally:
        if caller.poll() is None:
            caller.kill()
        caller.stdout.close()


def test_a_new_device_never_sweeps_a_directory_whose_caller_or_device_lives(tmp_path):
    live = _new_device(str(tmp_path))
    lost = _new_device(str(tmp_path))  # its device killed, its caller (this process) alive
    os.kill(lost.pid, signal.SIGKILL)
    lost.proc.wait(5)
    unknown = tmp_path / "caam-device-unlocked"  # one being made, or from an older version
    unknown.mkdir()
    (unknown / "memory").write_bytes(SECRET)
    fresh = _new_device(str(tmp_path))
    try:
        assert os.path.isdir(live.directory) and os.path.isdir(lost.directory)
        assert (unknown / "memory").read_bytes() == SECRET
        driver, transport = _driver(live)
        try:
            data = os.urandom(100)
            expected = ReferenceGCM(KEY).encrypt(NONCE, data, b"")
            assert aead.gcm_encrypt(driver, KEY, NONCE, data, b"") == expected
        finally:
            driver.close()
            transport.close()
    finally:
        for dev in (fresh, lost, live):
            dev.stop()
    assert not any(os.path.exists(d.directory) for d in (fresh, lost, live))


def test_an_orphaned_device_wipes_its_memory_before_removing_it():
    caller = _caller_of_a_device("d = DeviceProcess.start('t2080')\n")
    try:
        pid_text, directory = caller.stdout.readline().decode().split()
        fd = os.open(os.path.join(directory, "memory"), os.O_RDWR)
        try:
            os.pwrite(fd, SECRET, _pool_offset())
            caller.kill()
            caller.wait(5)
            assert _gone(int(pid_text))
            deadline = time.monotonic() + 5
            while os.path.exists(directory) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert not os.path.exists(directory)
            assert os.pread(fd, len(SECRET), _pool_offset()) == bytes(len(SECRET))
        finally:
            os.close(fd)
    finally:
        if caller.poll() is None:
            caller.kill()
        caller.stdout.close()
