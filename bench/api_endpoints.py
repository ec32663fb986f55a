"""The API part's endpoints, each beside its floor (bench/floor.py): what part 1 loads and
bench/api_profile.py profiles."""

LIST_20 = "GET /v1/channels/{id}/posts?per_page=20"
LIST_100 = "GET /v1/channels/{id}/posts?per_page=100"
POST = "GET /v1/channels/{id}/posts/{id}"
ME = "GET /v1/me"


def api_endpoints(seed: dict) -> list[tuple[str, str, str]]:
    """(label, path of the real endpoint, path of its floor)."""
    channel, post = seed["channel"], seed["post"]
    return [
        (LIST_20, f"/v1/channels/{channel}/posts?per_page=20", f"/v1/floor/channels/{channel}/posts?per_page=20"),
        (LIST_100, f"/v1/channels/{channel}/posts?per_page=100", f"/v1/floor/channels/{channel}/posts?per_page=100"),
        (POST, f"/v1/channels/{channel}/posts/{post}", f"/v1/floor/channels/{channel}/posts/{post}"),
        (ME, "/v1/me", "/v1/floor/me"),
    ]
