from django.apps import AppConfig


class EvalsetsConfig(AppConfig):
    name = "evalsets"
    verbose_name = "Eval sets"

    def ready(self) -> None:
        # Load the tasks (and with them context-grid and the resolver) when a process starts,
        # not inside the first request that queues background work: a web worker's first
        # write otherwise pays ~0.7 s of imports.
        from evalsets import tasks  # noqa: F401
