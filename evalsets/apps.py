from django.apps import AppConfig


class EvalsetsConfig(AppConfig):
    name = "evalsets"
    verbose_name = "Eval sets"
