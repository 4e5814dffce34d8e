"""The README and docs/ stand on their own in a clone (issue #30): every relative link points
at a file of the repository, none outside it (such as ../shared/DESIGN.md)."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_relative_links_resolve_inside_the_repository() -> None:
    checked = 0
    for document in DOCUMENTS:
        for target in LINK.findall(document.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor in the same page
            path = (document.parent / target.split("#")[0]).resolve()
            assert path.is_relative_to(REPO), f"{document.name} links outside the repository: {target}"
            assert path.exists(), f"{document.name} links a missing file: {target}"
            checked += 1
    assert checked > 0


def test_no_document_points_at_the_shared_design() -> None:
    for document in DOCUMENTS:
        assert "shared/DESIGN" not in document.read_text(), document.name
