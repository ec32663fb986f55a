"""The embedded broker (`CELERY_BROKER_URL=filesystem://`, the local default without Redis): kombu's
filesystem transport, with its messages written whole before any consumer can see them.

kombu writes a message file in place: created under its final name, then written. A worker that
polls the folder in between moves the file away and reads it empty, and the JSONDecodeError that
follows is "unrecoverable" to Celery: the worker stops consuming for good, and every task after it
waits (found under five editors' saves, tests/ops/test_embedded_broker.py). Here the message is
written under a name the consumer skips, then renamed to its final name, which is atomic within
the folder. `_put` is the one method replaced (a private method of kombu's public Channel class:
the test above fails if a kombu upgrade changes how messages are named or read).
"""

import contextlib
import os
import uuid
from time import monotonic_ns

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        # The consumer takes the names in sorted order and matches them by `.{queue}.msg`. kombu's
        # own start with the millisecond, unpadded: messages of one millisecond come in any order.
        name = f"{monotonic_ns():020d}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # A leading dot: the consumer takes the text after the first dot as the queue, and no queue
        # is called "<name>.part".
        aside = os.path.join(self.data_folder_out, f".{name}.part")
        try:
            with open(aside, "wb") as message:
                message.write(str_to_bytes(dumps(payload)))
            os.replace(aside, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.remove(aside)  # a disk that filled up mid-write leaves no half message behind
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel

    @property
    def default_connection_params(self) -> dict:
        # A folder needs no host. kombu's virtual transports default to "localhost", and a URL without
        # one (filesystem://) made every connection warn "No hostname was supplied" (each enqueue).
        return {"port": self.default_port, "hostname": None}
