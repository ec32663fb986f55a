"""A local SMTP sink for the newsletter part of `make bench`: a real SMTP server (aiosmtpd) that
takes every message, keeps the first one whole and one line per recipient, and says how many it
has taken in a file (the benchmark reads it; no HTTP in between to slow the server down).

    python -m bench.smtp_sink PORT WORK_DIR
"""

import signal
import sys
import threading
import time
from pathlib import Path

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.count = 0
        self.recipients = (work / "recipients.txt").open("a", buffering=1 << 16)
        self.first = work / "first.eml"

    async def handle_DATA(self, server, session, envelope) -> str:
        if self.count == 0:
            self.first.write_bytes(envelope.original_content)
        self.count += 1
        for address in envelope.rcpt_tos:
            self.recipients.write(f"{address}\n")
        return "250 OK"


def main() -> None:
    port, work = int(sys.argv[1]), Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    sink = Sink(work)
    controller = Controller(sink, hostname="127.0.0.1", port=port, data_size_limit=10 * 1024 * 1024)
    controller.start()
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    print(f"smtp sink ready on {port}", flush=True)
    while not stopping.wait(0.2):
        (work / "count").write_text(str(sink.count))
        sink.recipients.flush()
    controller.stop()
    sink.recipients.close()
    (work / "count").write_text(str(sink.count))
    time.sleep(0)


if __name__ == "__main__":
    main()
