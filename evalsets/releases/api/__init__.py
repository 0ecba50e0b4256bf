"""The API of releases and imports."""
