"""`tools.bench.memory`: the memory a benchmark row's buffers must fit in."""

from __future__ import annotations

from cryptoffload.tools.bench import memory

MEMINFO = "MemTotal:       24000000 kB\nMemFree:        20000000 kB\nMemAvailable:   12582912 kB\n"


def test_the_memory_available_is_linuxs_memavailable(tmp_path):
    path = tmp_path / "meminfo"
    path.write_text(MEMINFO)
    assert memory.available_bytes(str(path)) == 12 << 30


def test_without_meminfo_the_free_pages_are_counted(tmp_path):
    available = memory.available_bytes(str(tmp_path / "none"))
    assert available is None or available > 0


def test_a_size_over_a_third_of_the_memory_available_is_too_large(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 3 << 30)
    assert memory.too_large(1 << 30) is None
    why = memory.too_large((1 << 30) + 1)
    assert why is not None
    assert why.startswith(f"block size {(1 << 30) + 1} bytes (1.0 GiB) cannot be allocated here")
    assert why.endswith(f"3.0 GiB of memory available; give at most {1 << 30} bytes")
