"""A software TPM for the PKCS#11 tests: swtpm, tpm2-abrmd on a private D-Bus and a tpm2-pkcs11
token, all under one temporary directory, every process stopped by its id."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

LABEL = "cryptoffload-tpm"
PIN = "tpm-user-1"
PIN_ENV = "CRYPTOFFLOAD_TPM_PIN"
TOOLS = ("swtpm", "tpm2-abrmd", "dbus-daemon", "tpm2_ptool")
MODULE_GLOBS = ("/usr/lib/*/pkcs11/libtpm2_pkcs11.so", "/usr/lib/pkcs11/libtpm2_pkcs11.so")
TABRMD_GLOBS = ("/usr/lib/*/libtss2-tcti-tabrmd.so*", "/usr/lib/libtss2-tcti-tabrmd.so*")
PACKAGES = "swtpm swtpm-tools tpm2-abrmd libtss2-tcti-tabrmd0 libtpm2-pkcs11-1 "
PACKAGES += "libtpm2-pkcs11-tools dbus"
_ENV = ("DBUS_SESSION_BUS_ADDRESS", "TPM2_PKCS11_STORE", "TPM2_PKCS11_TCTI", "TPM2TOOLS_TCTI",
        "TPM2_PKCS11_LOG_LEVEL", PIN_ENV)  # fmt: skip


def _first(patterns: tuple[str, ...]) -> str | None:
    return next((hit for p in patterns for hit in sorted(glob.glob(p))), None)


def why_missing() -> str | None:
    """Why the TPM test cannot run here (None when it can)."""
    missing = [t for t in TOOLS if shutil.which(t) is None and not os.path.exists(f"/usr/sbin/{t}")]
    if _first(MODULE_GLOBS) is None:
        missing.append("libtpm2_pkcs11.so")
    if _first(TABRMD_GLOBS) is None:
        missing.append("libtss2-tcti-tabrmd")
    if missing:
        return f"no {', '.join(missing)} (Debian: apt-get install {PACKAGES})"
    return None


@dataclass
class Tpm:
    """The running stack: directory, module, the pids to stop, the environment it set."""

    directory: str
    module: str
    pids: list[int] = field(default_factory=list)
    saved_env: dict[str, str | None] = field(default_factory=dict)

    @property
    def spec(self) -> str:
        return f"pkcs11:module={self.module},token={LABEL},pin-env={PIN_ENV}"


def _free_port_pair() -> int:
    """A port p with p + 1 free too: the swtpm TCTI finds the control channel at p + 1."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no two consecutive free ports")


def _pid_file(path: str, deadline: float) -> int:
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            time.sleep(0.05)
    raise RuntimeError(f"no pid in {path}")


def _wait_listening(port: int, deadline: float) -> None:
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def start(timeout: float = 30.0) -> Tpm:
    """Start swtpm, a private D-Bus and tpm2-abrmd under a temporary directory, make a token.

    On failure whatever started is stopped and the error raised."""
    deadline = time.monotonic() + timeout
    d = tempfile.mkdtemp(prefix="tpm-")
    module = _first(MODULE_GLOBS)
    assert module is not None
    tpm = Tpm(d, module)
    try:
        os.mkdir(f"{d}/state")
        os.mkdir(f"{d}/store")
        port = _free_port_pair()
        subprocess.run(
            ["swtpm", "socket", "--tpm2", "--tpmstate", f"dir={d}/state",
             "--server", f"type=tcp,port={port}",
             "--ctrl", f"type=tcp,port={port + 1}",
             "--flags", "not-need-init,startup-clear", "--daemon",
             "--pid", f"file={d}/swtpm.pid", "--log", f"file={d}/swtpm.log"],
            check=True, capture_output=True, timeout=timeout,
        )  # fmt: skip
        tpm.pids.append(_pid_file(f"{d}/swtpm.pid", deadline))
        _wait_listening(port, deadline)
        with open(f"{d}/bus.conf", "w") as f:
            f.write(
                '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"'
                ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n'
                f"<busconfig><type>session</type><listen>unix:path={d}/bus</listen>"
                # The session bus's stock policy (without eavesdrop="true" this dbus-daemon
                # answers no method call).
                '<policy context="default"><allow send_destination="*" eavesdrop="true"/>'
                '<allow eavesdrop="true"/><allow own="*"/><allow user="*"/></policy>'
                "</busconfig>\n"
            )
        out = subprocess.run(
            ["dbus-daemon", f"--config-file={d}/bus.conf", "--fork", "--print-pid"],
            check=True, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        tpm.pids.append(int(out.stdout.split()[0]))
        env = {
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={d}/bus",
            "TPM2_PKCS11_STORE": f"{d}/store",
            "TPM2_PKCS11_TCTI": "tabrmd:bus_type=session",
            "TPM2TOOLS_TCTI": "tabrmd:bus_type=session",  # for tpm2_ptool's tools
            "TPM2_PKCS11_LOG_LEVEL": "0",  # its refusals to import keys are expected here
            PIN_ENV: PIN,
        }
        tpm.saved_env = {k: os.environ.get(k) for k in _ENV}
        os.environ.update(env)
        abrmd = ["tpm2-abrmd", "--session", f"--tcti=swtpm:host=127.0.0.1,port={port}"]
        if os.getuid() == 0:
            abrmd.append("--allow-root")
        log = open(f"{d}/abrmd.log", "wb")  # noqa: SIM115 - the daemon keeps it
        proc = subprocess.Popen(abrmd, stdout=log, stderr=log, start_new_session=True)
        tpm.pids.append(proc.pid)
        tpm._abrmd = proc  # type: ignore[attr-defined]
        while True:  # the store's primary key needs the daemon on the bus
            init = subprocess.run(["tpm2_ptool", "init", f"--path={d}/store"],
                                  capture_output=True, text=True, timeout=timeout)  # fmt: skip
            if init.returncode == 0:
                break
            if time.monotonic() > deadline or proc.poll() is not None:
                with open(f"{d}/abrmd.log", errors="replace") as f:
                    daemon = f.read()[-300:]
                raise RuntimeError(
                    f"tpm2_ptool init: {init.stderr.strip()[-300:]}; tpm2-abrmd: {daemon}"
                )
            time.sleep(0.2)
        subprocess.run(
            ["tpm2_ptool", "addtoken", "--pid=1", "--sopin=tpm-so-12", f"--userpin={PIN}",
             f"--label={LABEL}", f"--path={d}/store"],
            check=True, capture_output=True, timeout=timeout,
        )  # fmt: skip
    except BaseException:
        stop(tpm)
        raise
    return tpm


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def stop(tpm: Tpm) -> None:
    """Stop every process started (by pid, newest first), restore the environment, remove the
    directory."""
    proc = getattr(tpm, "_abrmd", None)
    for pid in reversed(tpm.pids):
        if proc is not None and proc.pid == pid:  # our child: terminate and reap it
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            continue
        with contextlib.suppress(ProcessLookupError):  # daemons: no longer our children
            os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if _gone(pid):
                break
            time.sleep(0.05)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    tpm.pids.clear()
    for key, value in tpm.saved_env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    shutil.rmtree(tpm.directory, ignore_errors=True)
