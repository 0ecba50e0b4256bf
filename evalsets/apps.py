from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from evalsets.pure import embedding, parsers


class EvalsetsConfig(AppConfig):
    name = "evalsets"
    verbose_name = "Eval sets"

    def ready(self) -> None:
        # Importing the tasks registers them with Celery under the names evalsets.queue looks
        # up, in the web process as in the worker; it must wait until the models are loaded,
        # hence here rather than at the top. It also loads context-grid and the resolver when
        # a process starts, not inside the first request that queues background work.
        from evalsets import tasks  # noqa: F401

        # A team's own parsers (GROUNDWORK_PARSERS, and the groundwork.parsers entry points),
        # registered beside the built-in ones in every process that starts the app.
        parsers.register_plugins(settings.GROUNDWORK_PARSERS)

        # Asked for and missing, the extra would leave search silently BM25 alone.
        if settings.GROUNDWORK_SEARCH_EMBEDDINGS and not embedding.available():
            raise ImproperlyConfigured(
                "GROUNDWORK_SEARCH_EMBEDDINGS is on but the embedding extra is not installed "
                f"(packages {', '.join(embedding.PACKAGES)}): run `make embeddings`, or unset it."
            )
