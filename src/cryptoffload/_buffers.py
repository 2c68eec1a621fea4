"""Where a buffer's bytes lie in memory: whether an ``*_into`` call's input and output overlap.

Output written over input that has not been read yet gives a wrong answer, and an engine that
writes its result straight into the caller's buffer (a DmaBuffer on the CAAM) would do exactly
that. `cryptography` refuses overlapping buffers from 51 on ("data and buf must not overlap");
the mirror refuses them on every path where the installed `cryptography` does, and where it
does not (50), no engine is handed a buffer that overlaps its input.
"""

from __future__ import annotations

from typing import Any

from cryptoffload._release import REFUSES_OVERLAP

#: Whether the installed `cryptography` refuses an ``*_into`` call whose buffers overlap.
REFUSED = REFUSES_OVERLAP
#: `cryptography`'s message for it.
MESSAGE = "data and buf must not overlap"


def _buffer_calls() -> tuple[Any, Any, Any, Any]:
    """(``Py_buffer``'s structure, ``PyObject_GetBuffer``, ``PyBuffer_Release``, ``byref``)
    through ctypes, made at the first overlap check that needs them (ctypes' import is a
    program's start-up cost)."""
    import ctypes

    class PyBuffer(ctypes.Structure):
        """CPython's ``Py_buffer`` (the stable buffer protocol's view record)."""

        _fields_ = [
            ("buf", ctypes.c_void_p),
            ("obj", ctypes.c_void_p),
            ("len", ctypes.c_ssize_t),
            ("itemsize", ctypes.c_ssize_t),
            ("readonly", ctypes.c_int),
            ("ndim", ctypes.c_int),
            ("format", ctypes.c_char_p),
            ("shape", ctypes.c_void_p),
            ("strides", ctypes.c_void_p),
            ("suboffsets", ctypes.c_void_p),
            ("internal", ctypes.c_void_p),
        ]

    get_buffer = ctypes.pythonapi.PyObject_GetBuffer
    get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(PyBuffer), ctypes.c_int]
    get_buffer.restype = ctypes.c_int
    release = ctypes.pythonapi.PyBuffer_Release
    release.argtypes = [ctypes.POINTER(PyBuffer)]
    release.restype = None
    return PyBuffer, get_buffer, release, ctypes.byref


_CALLS: list[tuple[Any, Any, Any, Any]] = []
_PYBUF_SIMPLE = 0


def span(obj: Any) -> tuple[int, int]:
    """(address of the first byte, length in bytes) of a contiguous buffer, read-only or not."""
    if not _CALLS:
        _CALLS.append(_buffer_calls())
    py_buffer, get_buffer, release, byref = _CALLS[0]
    view = py_buffer()
    get_buffer(obj, byref(view), _PYBUF_SIMPLE)  # raises the exporter's own error
    try:
        return view.buf or 0, view.len
    finally:
        release(byref(view))


def overlap(data: Any, buf: Any) -> bool:
    """Whether ``data`` and ``buf`` share a byte of memory (never for an empty one, nor for a
    ``bytes`` input: no writable buffer can alias one)."""
    if data.__class__ is bytes:
        return False
    if data.__class__ is bytearray and buf.__class__ is bytearray:
        return data is buf and len(data) > 0  # two bytearrays never share memory
    data_at, data_len = span(data)
    buf_at, buf_len = span(buf)
    if not data_len or not buf_len:
        return False
    return data_at < buf_at + buf_len and buf_at < data_at + data_len


def disjoint_input(data: Any, buf: Any) -> Any:
    """``data`` for an op that writes into ``buf``: ValueError with `cryptography`'s message
    where the installed `cryptography` refuses overlapping buffers and these overlap; where it
    takes them (50), a copy of ``data`` when they overlap, so that the answer is right whatever
    the engine does; else ``data`` itself."""
    if data.__class__ is bytes or not overlap(data, buf):
        return data
    if REFUSED:
        raise ValueError(MESSAGE)
    return bytes(data)


def refuse_overlap(data: Any, buf: Any) -> None:
    """ValueError with `cryptography`'s message where the installed `cryptography` refuses
    overlapping buffers and ``data`` and ``buf`` overlap (for a path that computes its answer
    apart and copies it into ``buf``: there overlap does no harm, so 50 takes it)."""
    if REFUSED and data.__class__ is not bytes and overlap(data, buf):
        raise ValueError(MESSAGE)
