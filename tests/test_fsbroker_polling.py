"""The filesystem broker's polling interval bounds how long an idle worker takes to notice
new work, never how many messages a busy one reads: real kombu connections on real files."""

from __future__ import annotations

import threading

import pytest
from kombu import Connection, Exchange, Queue

from labelling import fsbroker
from labelling.settings import filesystem_broker_options

#: Far longer than any test waits: a consumer that sleeps it even once times out.
SLOW_POLL_S = 60.0
#: A generous deadline for five short tasks' messages to be read.
DEADLINE_S = 20.0


@pytest.fixture
def broker(tmp_path):
    options = filesystem_broker_options(tmp_path / "broker")
    options["polling_interval"] = SLOW_POLL_S
    with Connection("filesystem://", transport_options=options) as connection:
        assert isinstance(connection.transport, fsbroker.Transport)
        yield connection


def _publish(connection, queue: Queue, count: int) -> None:
    with connection.Producer() as producer:
        for n in range(count):
            producer.publish({"n": n}, exchange=queue.exchange, routing_key="work", declare=[queue])


def test_a_worker_acknowledging_late_reads_message_after_message_without_sleeping_the_interval(
    broker,
):
    """Prefetch one, acknowledged from another thread a moment after delivery, as a Celery
    worker's pool does: kombu's transport slept the interval after each message (0.2 s
    each in the embedded default), here 60 s, so the second delivery would time out."""
    queue = Queue("work", Exchange("work"), "work")
    _publish(broker, queue, 5)
    seen: list[int] = []
    all_read = threading.Event()

    def on_message(body, message) -> None:
        seen.append(body["n"])
        threading.Timer(0.05, message.ack).start()  # the task runs, then is acknowledged

    def consume() -> None:
        with broker.Consumer(queue, callbacks=[on_message], prefetch_count=1):
            while len(seen) < 5:
                broker.drain_events()  # no timeout of its own, as a worker waits
        all_read.set()

    threading.Thread(target=consume, daemon=True).start()

    assert all_read.wait(DEADLINE_S), f"read {len(seen)} of 5 messages"
    assert sorted(seen) == [0, 1, 2, 3, 4]  # (messages of one millisecond: any order)


def test_a_worker_with_nothing_to_read_waits_for_its_deadline_and_says_so(tmp_path):
    options = filesystem_broker_options(tmp_path / "broker")
    options["polling_interval"] = 0.05
    queue = Queue("idle", Exchange("idle"), "idle")
    with (
        Connection("filesystem://", transport_options=options) as connection,
        connection.Consumer(queue, callbacks=[lambda body, message: None]),
        pytest.raises(TimeoutError),
    ):
        connection.drain_events(timeout=0.3)
