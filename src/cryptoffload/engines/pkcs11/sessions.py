"""One token per engine: the module initialised once per process, one login, a pool of sessions."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from cryptoffload.engines.pkcs11 import ck
from cryptoffload.engines.pkcs11.spec import Spec

#: Errors after which every session and object handle of the token is suspect: the engine
#: closes them all and opens again (logs in, re-imports keys) on the next operation.
RESET_ON = frozenset(
    {
        ck.CKR_SESSION_CLOSED,
        ck.CKR_SESSION_HANDLE_INVALID,
        ck.CKR_KEY_HANDLE_INVALID,
        ck.CKR_OBJECT_HANDLE_INVALID,
        ck.CKR_USER_NOT_LOGGED_IN,
        ck.CKR_DEVICE_ERROR,
        ck.CKR_DEVICE_REMOVED,
        ck.CKR_TOKEN_NOT_PRESENT,
        ck.CKR_CRYPTOKI_NOT_INITIALIZED,
    }
)


#: Of those, the errors that say only that handles this process held are gone (a session closed
#: under the engine, the token logged out or the module initialised again by another of its
#: users), not that the device failed: after the reset, the operation is run once more on fresh
#: sessions (it did nothing: a call refused for its handle has no output).
RETRY_AFTER_RESET = frozenset(
    {
        ck.CKR_SESSION_CLOSED,
        ck.CKR_SESSION_HANDLE_INVALID,
        ck.CKR_KEY_HANDLE_INVALID,
        ck.CKR_OBJECT_HANDLE_INVALID,
        ck.CKR_USER_NOT_LOGGED_IN,
        ck.CKR_CRYPTOKI_NOT_INITIALIZED,
    }
)


#: Modules known not to initialise again in a forked child: there the engine declines at once
#: (trying costs tpm2-pkcs11 a 25 s D-Bus timeout, then fails: its connection stays with the
#: parent).
FORK_UNSAFE = ("libtpm2_pkcs11",)


class TokenUnavailable(Exception):
    """The token cannot be reached; the message is the engine's reason (never holds a PIN)."""


class Token:
    """The module, the slot whose token has the spec's label, the logged-in keeper session and
    a pool of sessions (one per thread at a time; session objects stay valid in all of them).

    Thread-safe: ``open`` runs once under a lock; ``session()`` hands each caller its own
    session. After fork the child forgets every handle (``forget``) and opens again on first use.
    """

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.module: ck.Module | None = None
        self.slot = -1
        self.info: ck.TokenInfo | None = None
        self._lock = threading.Lock()
        self._keeper_lock = threading.Lock()
        self._keeper = -1
        self._free: list[tuple[int, int]] = []  # (session, generation it was opened in)
        self._all: set[int] = set()
        self._pid = -1
        #: Bumped each time handles are invalidated (fork, re-open): key caches compare it.
        self.generation = 0
        #: Why this process cannot use the token any more (a fork child whose module cannot
        #: initialise again): every use declines with it, without trying again.
        self.broken: str | None = None

    def open(self) -> None:
        """Initialise the module (CKF_OS_LOCKING_OK), find the token, log in once."""
        with self._lock:
            if self.broken:
                raise TokenUnavailable(self.broken)
            if self._pid == os.getpid() and self._keeper >= 0:
                return
            forked = self._pid not in (-1, os.getpid())
            try:
                self._open_locked()
            except TokenUnavailable as exc:
                if forked:  # a child whose module does not come back: do not try again
                    self.broken = f"in a forked child: {exc}"
                raise

    def _open_locked(self) -> None:
        spec = self.spec
        if self.module is not None:  # a reset: the module stays initialised
            self._login(self.module)
            return
        if not os.path.exists(spec.module):
            raise TokenUnavailable(f"no PKCS#11 module at {spec.module}")
        try:
            module = ck.acquire(spec.module)
        except OSError as exc:
            raise TokenUnavailable(f"cannot load {spec.module}: {exc}") from None
        except ck.CkError as exc:
            raise TokenUnavailable(f"{spec.module} does not initialise: {exc}") from None
        try:
            self._login(module)
        except BaseException:
            ck.release(spec.module)
            raise
        self.module = module

    def _login(self, module: ck.Module) -> None:
        spec = self.spec
        try:
            for slot in module.slots():
                info = module.token_info(slot)
                if info.label.rstrip(b" \0").decode(errors="replace") == spec.token:
                    break
            else:
                raise TokenUnavailable(f"no token labelled {spec.token!r} in {spec.module}")
            keeper = module.open_session(slot)
        except ck.CkError as exc:
            raise TokenUnavailable(f"token {spec.token!r}: {exc}") from None
        try:
            if info.flags & ck.CKF_LOGIN_REQUIRED:
                self._user_login(module, keeper)
        except BaseException:
            module.close_session(keeper)
            raise
        self.slot, self.info, self._keeper = slot, info, keeper
        self._pid = os.getpid()

    def _user_login(self, module: ck.Module, keeper: int) -> None:
        spec = self.spec
        try:
            pin = spec.read_pin()
        except LookupError as exc:
            raise TokenUnavailable(str(exc)) from None
        if pin is None:
            raise TokenUnavailable(
                f"token {spec.token!r} needs a login: give pin-env=VAR or pin-file=PATH"
            )
        try:
            module.login(keeper, pin)
        except ck.CkError as exc:
            what = "wrong PIN" if exc.rv == ck.CKR_PIN_INCORRECT else str(exc)
            raise TokenUnavailable(f"login to token {spec.token!r} failed: {what}") from None

    def ensure(self) -> None:
        if self._pid != os.getpid() or self._keeper < 0:
            self.open()

    @contextlib.contextmanager
    def session(self) -> Iterator[int]:
        """A session of this token for the caller alone; closed for good if it was lost."""
        self.ensure()
        module = self.module
        assert module is not None
        session, generation = -1, self.generation
        with self._lock:
            while self._free and session < 0:
                session, opened = self._free.pop()
                if opened != generation:  # from before a reset: already closed
                    session = -1
        if session < 0:
            session = module.open_session(self.slot)
            with self._lock:
                self._all.add(session)
        lost = False
        try:
            yield session
        except ck.CkError:
            # Closed rather than reused: a failed call may leave an operation active on it.
            lost = True
            raise
        finally:
            if lost:
                module.close_session(session)
                with self._lock:
                    self._all.discard(session)
            else:
                with self._lock:
                    self._free.append((session, generation))

    def reset(self, generation: int) -> None:
        """After a session or handle error seen in ``generation``: close every session (the
        keeper too: its objects go) so that the next use logs in and imports afresh. A reset
        already done since that generation is not repeated."""
        with self._lock:
            if generation != self.generation or self.module is None:
                return
            for session in self._all:
                self.module.close_session(session)
            if self._keeper >= 0:
                self.module.close_session(self._keeper)
            self._free, self._all, self._keeper = [], set(), -1
            self.generation += 1

    @contextlib.contextmanager
    def keeper(self) -> Iterator[int]:
        """The logged-in session that owns the engine's session objects (imported keys), which
        every other session of the process sees; one caller at a time."""
        self.ensure()
        with self._keeper_lock:
            yield self._keeper

    def forget(self) -> None:
        """In a fork child: the parent's sessions and objects are not ours; open again later."""
        self._free, self._all = [], set()
        self._keeper = -1
        self._lock = threading.Lock()
        self._keeper_lock = threading.Lock()
        self.generation += 1
        self.module = None
        if any(name in os.path.basename(self.spec.module) for name in FORK_UNSAFE):
            self.broken = (
                f"{os.path.basename(self.spec.module)} cannot initialise again in a forked "
                "child: the token is the parent's; this process declines it"
            )
            return
        ck.forget_all()  # the child's copy of the module state; the parent keeps its own

    def close(self) -> None:
        """Close every session (the keeper last: its objects go with it) and finalize."""
        with self._lock:
            if self.module is None or self._pid != os.getpid():
                return
            for session in self._all:
                self.module.close_session(session)
            if self._keeper >= 0:
                self.module.close_session(self._keeper)
            self._free, self._all, self._keeper = [], set(), -1
            self.module = None
            self._pid = -1
            self.generation += 1
            ck.release(self.spec.module)
