"""kombu's filesystem transport (the embedded default's broker), with messages that appear whole.

kombu 5.7 creates a message's file under its final name, then writes it; a worker polling the
folder at that moment takes the empty file, fails to decode it and its consumer stops for
good ("Unrecoverable error: JSONDecodeError"): under 40 anchors/s the resolve worker died
this way a minute into the sustained benchmark and 1,347 resolutions were never written.
Here a message is written under a name no queue matches (a leading dot and ``.part``), then
renamed to its final name, which the kernel does at once: a reader sees all of it or nothing.

kombu's virtual transports sleep the whole polling interval after every poll that delivered
nothing, and a worker whose prefetch is full (one task at a time, acknowledged late) polls
nothing until its task is acknowledged: so each message cost at least one interval (0.2 s)
however short its task, and a queue of messages that do nothing (a task that finds its work
done) held every message behind it for a fifth of a second each. Here a worker waiting for
its own task's acknowledgement looks again within milliseconds, backing off towards the
interval while the task runs long; only a folder with nothing to read waits the interval.
"""

from __future__ import annotations

import os
import uuid
from queue import Empty
from time import monotonic, sleep, time

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """Put ``payload`` onto ``queue``: written aside, then renamed into the queue."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.part")
        try:
            with open(partial, "wb", buffering=0) as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


#: A ``.part`` file this old was left by a writer that died between creating it and renaming
#: it (a kill, a full disk): a live writer renames within milliseconds.
PART_GRACE_S = 60.0


def remove_stale_parts(folder: str, older_than_s: float = PART_GRACE_S) -> int:
    """Delete the half-written messages (``.<name>.part``) in ``folder`` older than
    ``older_than_s``; no queue reads them, so nothing else ever would. How many."""
    cutoff = time() - older_than_s
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return 0
    for entry in entries:
        if not (entry.name.startswith(".") and entry.name.endswith(".part")):
            continue
        try:
            if entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
                removed += 1
        except FileNotFoundError:
            continue  # renamed into the queue or removed meanwhile
    return removed


#: The first pause while a worker waits for its own task's acknowledgement, in seconds; each
#: further empty poll doubles it, up to the polling interval.
FIRST_PAUSE_S = 0.002


class Transport(filesystem.Transport):
    Channel = Channel
    #: The sweep reaches this through kombu's transport registry, not by importing the site.
    remove_stale_parts = staticmethod(remove_stale_parts)

    def _waiting_for_an_ack(self) -> bool:
        """True when a consuming channel can take no message until one is acknowledged."""
        return any(ch._consumers and not ch.qos.can_consume() for ch in self.channels)

    def drain_events(self, connection, timeout=None):
        """Deliver one message, as kombu's does, pausing between empty polls for the
        polling interval only when the folder itself had nothing to give."""
        started = monotonic()
        pause = FIRST_PAUSE_S
        while True:
            try:
                self.cycle.get(self._deliver, timeout=timeout)
                return
            except Empty:
                if timeout is not None and monotonic() - started >= timeout:
                    raise TimeoutError() from None
                interval = self.polling_interval or 0
                if timeout:
                    interval = min(interval, timeout)
                if self._waiting_for_an_ack():
                    sleep(min(pause, interval))
                    pause *= 2
                else:
                    sleep(interval)
