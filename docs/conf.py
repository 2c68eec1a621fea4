"""Sphinx configuration of cryptoffload's documentation site (pages in MyST Markdown)."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "src"))

project = "cryptoffload"
author = "cryptoffload"
extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
# Links to a heading of another page (`page.md#a-heading`) are checked like any other reference.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
html_theme = "alabaster"
html_title = "cryptoffload"
