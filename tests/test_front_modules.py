"""The browser code is native ES modules, wired so each runs once on a page.

A page loads its own entry modules with ``<script type="module">`` and they import the rest.
In production static files get hashed names (``item.1a2b.js``) in the tags while imports between
modules keep the plain names, and a browser runs a module once per URL: a module both named in
a tag and imported would run twice (its keys and listeners doubled). So no module a template
names is imported by another, and every import names a file that is there. The modules'
own lint and unit tests run in Node (``make lint-js test-js``); these checks need no Node.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATIC_JS = ROOT / "static" / "js"
TEMPLATES = ROOT / "templates"

SCRIPT_TAG = re.compile(r"<script\b[^>]*>", re.IGNORECASE)
STATIC_JS_SRC = re.compile(r"""src="\{% static '(js/[^']+)' %\}\"""")
IMPORT = re.compile(r"""^\s*import\s+(?:[^'"]*?\s+from\s+)?["']([^"']+)["']""", re.MULTILINE)


def entry_tags() -> list[tuple[str, str, str]]:
    """(template, tag, static path) for each ``<script>`` a template loads from static/js."""
    found = []
    for template in sorted(TEMPLATES.rglob("*.html")):
        for tag in SCRIPT_TAG.findall(template.read_text()):
            src = STATIC_JS_SRC.search(tag)
            if src:
                found.append((str(template.relative_to(ROOT)), tag, src.group(1)))
    return found


def imports() -> dict[Path, list[Path]]:
    """Each module's relative imports, as the files they resolve to."""
    return {
        module: [
            (module.parent / spec).resolve()
            for spec in IMPORT.findall(module.read_text())
            if spec.startswith(".")
        ]
        for module in sorted(STATIC_JS.rglob("*.js"))
    }


def test_every_page_script_is_loaded_as_a_module():
    classic = [(t, tag) for t, tag, _ in entry_tags() if 'type="module"' not in tag]
    assert entry_tags() and classic == []


def test_every_relative_import_names_a_module_that_is_there():
    missing = [
        f"{module.relative_to(ROOT)} -> {target}"
        for module, targets in imports().items()
        for target in targets
        if not target.is_file()
    ]
    assert missing == []


def test_no_module_a_template_loads_is_also_imported_by_another():
    entries = {(ROOT / "static" / path).resolve() for _, _, path in entry_tags()}
    both = sorted(
        f"{target.relative_to(ROOT)} (imported by {module.relative_to(ROOT)})"
        for module, targets in imports().items()
        for target in targets
        if target in entries
    )
    assert both == []
