"""On a lane with an engine, AES-GCM ops whose fields the primitive checked itself skip the
lane's validation; every other input still gets the lane's checks: the same answers, errors and
counts as software alone gives."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.exceptions import InvalidTag

from cryptoffload import Provider, using
from cryptoffload.aead import AESGCM
from cryptoffload.core import lane as lane_module

KEY = bytes(range(16))


def outcome(provider: Provider, call: str, *args: Any) -> Any:
    """What ``AESGCM(KEY).<call>(*args)`` gives on ``provider``: a result or (class, message)."""
    with using(provider):
        try:
            return getattr(AESGCM(KEY), call)(*args)
        except Exception as exc:
            return type(exc), str(exc)


@pytest.mark.parametrize(
    ("call", "args"),
    [
        ("encrypt", (bytes(12), b"record", b"aad")),
        ("encrypt", (bytes(8), bytearray(b"record"), None)),
        ("encrypt", (bytes(7), b"record", None)),
        ("encrypt", (bytes(129), b"record", None)),
        ("encrypt", ("nonce-as-str", b"record", None)),
        ("encrypt", (bytes(12), "text", None)),
        ("encrypt", (bytes(12), b"record", "aad-as-str")),
        ("decrypt", (bytes(12), bytes(15), None)),
        ("decrypt", (bytes(12), bytes(16), None)),
        ("decrypt", (bytes(12), memoryview(bytes(40)), b"aad")),
        ("decrypt", (bytes(6), bytes(40), None)),
    ],
)
def test_engine_lane_gives_software_only_answers(call: str, args: tuple[Any, ...]) -> None:
    assert outcome(Provider(["passthrough"]), call, *args) == outcome(Provider([]), call, *args)


def test_plain_fields_skip_validation_and_others_are_validated(monkeypatch) -> None:
    checked: list[str] = []
    validate = lane_module.validate_op
    monkeypatch.setattr(
        lane_module, "validate_op", lambda op: checked.append(op.kind) or validate(op)
    )
    provider = Provider(["passthrough"])
    with using(provider):
        box = AESGCM(KEY)
        sealed = box.encrypt(bytes(12), b"record", None)
        assert box.decrypt(bytes(12), sealed, None) == b"record"
        assert not checked
        assert box.decrypt(bytes(12), bytearray(sealed), None) == b"record"
        with pytest.raises(InvalidTag):
            box.decrypt(bytes(12), sealed[:-1] + b"\0", None)
    assert checked == ["decrypt"]
    assert provider.counters.snapshot()["passthrough"]["aes-128-gcm"]["ops"] == 4
