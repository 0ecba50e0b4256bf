"""Code that imports no Django, no DRF, no Celery and nothing of evalsets outside this
package: the resolver, text search and diffs, PDF drawing, rendering, the archive reader,
the eval-set formats and the document parsers. It runs (and is tested) without a database;
import-linter holds the line (``lint-imports``).
"""
