"""The API of documents, their parses, pages, PDF and rendered views."""
