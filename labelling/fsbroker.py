"""The embedded broker: kombu's filesystem transport, with each message written whole before
any worker can see it.

kombu's own ``_put`` creates the message file in the queue folder, then writes it; a worker
polling the folder in between moves the file away, reads nothing and stops for good
("Unrecoverable error: JSONDecodeError"), and the message is lost with it. That killed
``make run``'s resolve worker 5 s into the sustained benchmark's 40 anchors/s (issue 18).
Here a message is written under a name no queue reads (a dot-file ending ``.part``) and
renamed into place, which is atomic within a folder. ``labelling.celery`` makes
``filesystem://`` mean this transport in every process.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """Put ``payload`` onto ``queue``: kombu's file name, written aside then renamed."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.part")
        try:
            with open(partial, "wb") as handle:
                handle.write(str_to_bytes(filesystem.dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
