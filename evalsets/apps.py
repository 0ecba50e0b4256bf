from django.apps import AppConfig


class EvalsetsConfig(AppConfig):
    name = "evalsets"
    verbose_name = "Eval sets"

    def ready(self) -> None:
        # Importing the tasks registers them with Celery under the names evalsets.queue looks
        # up, in the web process as in the worker; it must wait until the models are loaded,
        # hence here rather than at the top. It also loads context-grid and the resolver when
        # a process starts, not inside the first request that queues background work.
        from evalsets import tasks  # noqa: F401
