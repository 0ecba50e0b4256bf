from django.apps import AppConfig


class PerAnchorPeer(AppConfig):
    name = "per_anchor"
    label = "bench_per_anchor"

    def ready(self) -> None:
        # The peer imports the models and the tasks' base class, so it must wait until the
        # apps are loaded, as the product's own tasks do.
        from per_anchor import peer

        peer.install()
