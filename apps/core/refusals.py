"""An outside party's own words for a refusal, read from its JSON answer the same way for every
destination: the first of `keys` that holds a non-empty string, on one line, else the HTTP status."""

import requests

LIMIT = 500


def words(response: requests.Response, keys: tuple[str, ...]) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        for key in keys:
            if isinstance(body.get(key), str) and body[key].strip():
                return " ".join(body[key].split())[:LIMIT]
    return f"HTTP {response.status_code} {response.reason or ''}".strip()
