"""A project's sdist from the package index's simple API: downloaded once, sha256-checked, cached.

Shared by the compatibility runners (pyca_suite.py, apps.py), which take the test suites from
the sdists.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
import shutil
import urllib.request

CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache"))
CACHE = CACHE / "cryptoffload-compat"
SIMPLE = "https://pypi.org/simple/{project}/"


def sdist_link(project: str, filename: str) -> tuple[str, str]:
    """(URL, sha256) of ``filename`` from the project's page in the index's simple API."""
    index = SIMPLE.format(project=re.sub(r"[-_.]+", "-", project).lower())
    request = urllib.request.Request(index, headers={"Accept": "text/html"})
    with urllib.request.urlopen(request, timeout=60) as response:
        page = response.read().decode("utf-8", "replace")
    match = re.search(rf'href="([^"#]*/{re.escape(filename)})#sha256=([0-9a-f]{{64}})"', page)
    if match is None:
        raise SystemExit(f"{index} lists no {filename}")
    return match.group(1), match.group(2)


def fetch_sdist(project: str, filename: str, cache: pathlib.Path = CACHE) -> pathlib.Path:
    """The sdist ``filename``, downloaded once and checked against the index's sha256."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / filename
    recorded = cache / f"{filename}.sha256"
    if path.exists() and recorded.exists() and sha256_of(path) == recorded.read_text().strip():
        return path
    url, expected = sdist_link(project, filename)
    partial = cache / f"{filename}.part"
    with urllib.request.urlopen(url, timeout=300) as response, open(partial, "wb") as f:
        shutil.copyfileobj(response, f)
    got = sha256_of(partial)
    if got != expected:
        partial.unlink()
        raise SystemExit(f"sha256 mismatch for {url}: index says {expected}, got {got}")
    partial.replace(path)
    recorded.write_text(expected + "\n")
    return path


def sha256_of(path: pathlib.Path) -> str:
    """The file's sha256, hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
