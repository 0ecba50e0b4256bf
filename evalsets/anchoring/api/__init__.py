"""The API of eval sets, items and anchors."""
