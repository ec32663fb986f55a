"""The floor of the webhook benchmark: one process posting the same signed bodies to the same
receiver over one pooled requests session, one after the other.

    python bench/webhook_floor.py URL SECRET BODIES_JSONL

Each line of BODIES_JSONL is {"delivery": id, "event": kind, "body": text}. Prints a JSON line
with the seconds from the first request to the last 2xx and the number of 2xx answers.
"""

import hashlib
import hmac
import json
import sys
import time

import requests


def main() -> None:
    url, secret, path = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
    with open(path, encoding="utf-8") as lines:
        items = [json.loads(line) for line in lines]
    bodies = [(item["delivery"], item["event"], item["body"].encode()) for item in items]
    session = requests.Session()
    ok = 0
    started = time.perf_counter()
    for delivery, event, body in bodies:
        timestamp = str(int(time.time()))
        signature = hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        headers = {
            "Content-Type": "application/json",
            "X-Service-Event": event,
            "X-Service-Delivery": delivery,
            "X-Service-Timestamp": timestamp,
            "X-Service-Signature": signature,
        }
        response = session.post(url, data=body, headers=headers, timeout=10)
        ok += 200 <= response.status_code < 300
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "ok": ok}))


if __name__ == "__main__":
    main()
