"""The API of review workflow, assignments, comments, dashboard and inbox."""
