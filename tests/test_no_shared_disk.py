"""No product code depends on a disk that hosts share: every stored file goes through the
storage API (``evalsets.storage``, a FileField's storage), never by a path under MEDIA_ROOT.

Read from the source: a stored file's ``.path`` (or a storage's ``path()``) and any mention of
``MEDIA_ROOT`` outside the settings would make a web host read only what a worker on the same
disk wrote.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = [ROOT / "evalsets", ROOT / "labelling"]
#: The settings define MEDIA_ROOT for the file-system storage backend itself.
ALLOWED_MEDIA_ROOT = {ROOT / "labelling" / "settings.py"}
#: ``.path`` on these is no stored file: os.path, a request's URL path, a directory entry
#: of a host's own cache folder.
NOT_STORED = {"os", "request", "self.request", "entry"}


def _sources() -> list[Path]:
    return sorted(p for folder in PRODUCT for p in folder.rglob("*.py") if "tests" not in p.parts)


def _findings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "path":
            base = ast.unparse(node.value)
            if base not in NOT_STORED:
                found.append(f"{where}:{node.lineno}: {base}.path")
        named = (isinstance(node, ast.Name) and node.id == "MEDIA_ROOT") or (
            isinstance(node, ast.Attribute) and node.attr == "MEDIA_ROOT"
        )
        if named and path not in ALLOWED_MEDIA_ROOT:
            found.append(f"{where}:{node.lineno}: MEDIA_ROOT")
        if isinstance(node, ast.Constant) and node.value == "MEDIA_ROOT":
            found.append(f"{where}:{node.lineno}: 'MEDIA_ROOT'")
    return found


def test_no_product_code_reads_a_stored_file_by_its_path_or_media_root():
    findings = [line for path in _sources() for line in _findings(path)]
    assert findings == []


def test_the_check_finds_a_stored_files_path_and_media_root(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def f(document, request, settings):\n"
        "    return document.file.path, request.path, settings.MEDIA_ROOT\n",
        encoding="utf-8",
    )
    assert _findings(planted) == ["planted.py:2: document.file.path", "planted.py:2: MEDIA_ROOT"]
