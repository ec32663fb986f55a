"""The media part of `make bench` (issue 55): an upload of a 5 MB photograph through `POST /v1/media`
on the Procfile's web process (default settings, the embedded default's local media folder), its
responsive copies made as the worker makes them (`variants_make`, in this process), against a plain
Pillow open -> strip -> save of the same file in this process; and a stored image served by the web
process at `/media/<name>`, with and without `If-None-Match`.
"""

import io
import statistics
import time
from pathlib import Path

from bench.common import WEB_CONCURRENCY, WEB_PORT, WORK, fresh_directory, verdict
from bench.load import Load, cpu_snapshot, start_web, wrk

UPLOADS = 20  # timed uploads, each taking turns with a baseline run
VARIANT_RUNS = 5
TARGET = 1.5  # the upload's answer time against the baseline's, at most
PHOTO_SIZE = (4000, 3000)
# The grain that makes the photograph about 5 MB at quality 95 (a camera's JPEG of 12 megapixels).
GRAIN = 7.5


def photo_jpeg() -> bytes:
    """A photograph-like JPEG of about 5 MB: smooth colour gradients under a camera's grain, at
    quality 95, with the EXIF a camera writes (its make, the orientation, a GPS position)."""
    from PIL import Image, ImageChops

    gradients = [
        Image.linear_gradient("L").resize(PHOTO_SIZE),
        Image.radial_gradient("L").resize(PHOTO_SIZE),
        Image.linear_gradient("L").rotate(90).resize(PHOTO_SIZE),
    ]
    channels = [
        ImageChops.add(gradient.point(lambda v: v * 3 // 4), Image.effect_noise(PHOTO_SIZE, GRAIN), offset=-96)
        for gradient in gradients
    ]
    exif = Image.Exif()
    exif[0x010F] = "Bench Camera"  # Make
    exif[0x0112] = 1  # Orientation
    exif[0x8825] = {1: "N", 2: (52.0, 31.0, 12.0), 3: "E", 4: (13.0, 24.0, 36.0)}  # GPS
    output = io.BytesIO()
    Image.merge("RGB", channels).save(output, "JPEG", quality=95, exif=exif.tobytes())
    return output.getvalue()


def seed() -> str:
    """An enterprise account with an editor and a key that uploads and reads media; the raw key."""
    from datetime import UTC, datetime, timedelta

    from apps.accounts.models import Scope
    from apps.users.credentials import api_key_create
    from apps.users.models import Role, User, default_permissions_for
    from bench.common import make_account

    account = make_account("Bench Media")
    user = User.objects.create(
        account=account,
        email="media@bench.example",
        name="Bench Uploader",
        role=Role.EDITOR,
        permissions=default_permissions_for(Role.EDITOR),
    )
    _, key = api_key_create(
        account=account,
        user=user,
        name="bench media",
        scopes=[Scope.READ_MEDIA, Scope.WRITE_MEDIA],
        expires_at=datetime.now(UTC) + timedelta(days=30),
    )
    return key


def baseline(path: Path, out: Path) -> tuple[float, float]:
    """Seconds (elapsed, and of CPU) of a plain Pillow open -> strip -> save of the file: decoded,
    its metadata dropped and written with the encoder options the service keeps for an upright JPEG
    (its own quantization)."""
    from PIL import Image

    started, cpu = time.perf_counter(), time.process_time()
    with Image.open(path) as image:
        image.load()
        image.info = {}
        image.save(out, "JPEG", quality="keep", subsampling="keep")
    return time.perf_counter() - started, time.process_time() - cpu


def upload(session, key: str, data: bytes) -> tuple[float, dict]:
    """Seconds from sending the upload to its answer read, and the answer's `data`."""
    started = time.perf_counter()
    response = session.post(
        f"http://127.0.0.1:{WEB_PORT}/v1/media",
        headers={"Authorization": f"Bearer {key}"},
        files={"file": ("bench-photo.jpg", data, "image/jpeg")},
        data={"alt_text": "A benchmark photograph"},
        timeout=60,
    )
    elapsed = time.perf_counter() - started
    if response.status_code != 201:
        raise RuntimeError(f"upload answered {response.status_code}: {response.text[:500]}")
    return elapsed, response.json()["data"]


def variant_times(medium_ids: list[int]) -> list[float]:
    """Seconds of `variants_make` (the worker task's work) for each upload, its copies' files removed
    first: all uploads are the same bytes, so they share the names the first run wrote."""
    from apps.media.models import Medium
    from apps.media.storage import media_storage
    from apps.media.variants import variants_make

    storage, times = media_storage(), []
    for medium_id in medium_ids:
        for medium in Medium.objects.exclude(variants=[]).only("variants"):
            for variant in medium.variants:
                storage.delete(variant["name"])
        started = time.perf_counter()
        if not variants_make(medium_id):
            raise RuntimeError(f"the copies of medium {medium_id} were not made")
        times.append(time.perf_counter() - started)
    return times


def served(wrk_bin: str, name: str, seconds: int) -> dict[str, dict]:
    """wrk's figures for GET /media/<name>: the whole file, and a revalidation answered 304."""
    results = {}
    for label, headers in (("200", ()), ("304", (f'If-None-Match: "{name}"',))):
        load = Load()
        load.add(wrk(wrk_bin, None, f"/media/{name}", seconds, headers=headers))
        results[label] = load.figures()
    return results


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def bench_media(wrk_bin: str, duration: int, uploads: int = UPLOADS) -> dict:
    import requests

    from apps.media.models import Medium
    from apps.media.storage import media_storage

    work = fresh_directory(WORK / "media-baseline")
    fresh_directory(Path(media_storage().location))
    data = photo_jpeg()
    source = work / "photo.jpg"
    source.write_bytes(data)
    key = seed()
    web = start_web("web")
    try:
        session = requests.Session()
        for _ in range(2 * int(WEB_CONCURRENCY)):  # each process's first upload pays its imports and connections
            upload(session, key, data)
        answers, baselines, media = [], [], []
        web_cpu = cpu_snapshot(web.popen.pid)["web"]
        for run in range(uploads):
            baselines.append(baseline(source, work / f"out-{run % 2}.jpg"))
            elapsed, medium = upload(session, key, data)
            answers.append(elapsed)
            media.append(medium)
        # The baselines ran in this process, so the web processes' CPU meanwhile is the uploads'.
        web_cpu = (cpu_snapshot(web.popen.pid)["web"] - web_cpu) / uploads
        variants = variant_times([medium["id"] for medium in media[:VARIANT_RUNS]])
        stored = media[0]["url"].rsplit("/", 1)[-1]
        copies = Medium.objects.get(pk=media[0]["id"]).variants
        page_copy = next(v["name"] for v in copies if v["width"] == 960 and v["mime_type"] == "image/jpeg")
        files = {"the upload as stored": stored, "its 960-pixel JPEG copy": page_copy}
        serving = {label: served(wrk_bin, name, duration) for label, name in files.items()}
    finally:
        web.stop()
    sizes = {label: media_storage().size(name) for label, name in files.items()}
    return {
        "photo_bytes": len(data),
        "stored_bytes": media[0]["bytes"],
        "uploads": uploads,
        "answer": answers,
        "baseline": [elapsed for elapsed, _ in baselines],
        "baseline_cpu": statistics.mean(cpu for _, cpu in baselines),
        "web_cpu": web_cpu,
        "variants": variants,
        "variant_count": len(copies),
        "serving": serving,
        "sizes": sizes,
        "duration": duration,
    }


def media_section(result: dict) -> list[str]:
    answer, base = statistics.median(result["answer"]), statistics.median(result["baseline"])
    ratio = answer / base
    variants = statistics.median(result["variants"])
    cpu_ratio = result["web_cpu"] / result["baseline_cpu"]
    lines = [
        "## Media uploads (issue 55)",
        "",
        f"A photograph-like JPEG of {PHOTO_SIZE[0]}x{PHOTO_SIZE[1]} pixels, {result['photo_bytes'] / 1e6:.2f} MB "
        f"(quality 95, camera EXIF with a GPS position), uploaded {result['uploads']} times through `POST /v1/media` "
        "on the Procfile's web process (default settings, the local media folder), one at a time, each taking turns "
        "with the baseline: a plain Pillow open -> strip -> save of the same file in the benchmark's process (the "
        f"service's encoder options for an upright JPEG). Stored: {result['stored_bytes'] / 1e6:.2f} MB. The copies: "
        f"`variants_make` (the worker task's work, {result['variant_count']} files) in the benchmark's process.",
        "",
        "| Measure | median ms | p95 ms | ratio to the baseline | target |",
        "|---|---|---|---|---|",
        f"| upload answer (`POST /v1/media`, 201) | {answer * 1000:.0f} | {_p95(result['answer']) * 1000:.0f} | "
        f"{ratio:.2f}x | ≤{TARGET}x: {verdict(ratio <= TARGET)} |",
        f"| baseline (open -> strip -> save) | {base * 1000:.0f} | {_p95(result['baseline']) * 1000:.0f} | 1.00x | |",
        f"| the copies (`variants_make`, {len(result['variants'])} runs) | {variants * 1000:.0f} | "
        f"{max(result['variants']) * 1000:.0f} (max) | {variants / base:.2f}x | |",
        "",
        f"CPU per upload: the web processes {result['web_cpu'] * 1000:.0f} ms (all their threads, the request's "
        f"parsing, checks, re-encoding, store and row), the baseline {result['baseline_cpu'] * 1000:.0f} ms: "
        f"{cpu_ratio:.2f}x.",
        "",
        f"`GET /media/<name>` from the web process, wrk with {result['duration']} s per line, 32 connections, no key:",
        "",
        "| File | bytes | answer | req/s | p50 ms | p99 ms | errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, answers in result["serving"].items():
        for status, f in answers.items():
            lines.append(
                f"| {label} | {result['sizes'][label]} | {status} | {f['rps']:.0f} | {f['p50']:.1f} | "
                f"{f['p99']:.1f} | {f['non_2xx'] + f['socket_errors']} |"
            )
    return [*lines, ""]
