"""A destination is one package (issue 54): everything the service knows of a kind is declared in
apps/publishing/<kind>/ and registered once, so nothing outside the package names the kind but its
line in INSTALLED_APPS. Names are searched as git's whole-word, case-insensitive search finds them."""

import subprocess
from pathlib import Path

import pytest

from apps.core.destinations import kind_for, kinds

ROOT = Path(__file__).resolve().parents[2]
# Where a kind's name is expected outside its package: what people read (docs/, README.md), what
# tries the service (tests/, bench/ and the CI script, which installs the tools the tests drive, the
# git CLI among them), the demo data that shows each kind, and migrations (history, never edited).
EXPECTED_ELSEWHERE = (":!docs", ":!README.md", ":!tests", ":!bench", ":!.ci", ":!apps/demo", ":!**/migrations/**")


def places_naming(name: str, package: str) -> list[str]:
    """Every line outside `package` (and the places above) that names `name` as a whole word."""
    found = subprocess.run(
        ["git", "grep", "--untracked", "-n", "-i", "-w", "-e", name, "--", ".", f":!{package}", *EXPECTED_ELSEWHERE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode in (0, 1), found.stderr
    return found.stdout.splitlines()


def installed_apps_line(hit: str, app: str) -> bool:
    return hit.split(":", 2)[2].strip() == f'"{app}",' and hit.startswith("config/")


def test_the_channels_destination_platforms_are_the_registrys_not_a_copy(monkeypatch):
    from apps.channels.models import DESTINATION_PLATFORMS
    from apps.core import destinations

    assert set(DESTINATION_PLATFORMS) == {kind.platform for kind in kinds()} >= {"git", "linkedin", "newsletter"}
    monkeypatch.setattr(destinations, "_kinds", dict(destinations._kinds))
    monkeypatch.delitem(destinations._kinds, "linkedin")
    assert "linkedin" not in DESTINATION_PLATFORMS and "git" in DESTINATION_PLATFORMS
    destinations.register(destinations.DestinationKind(platform="pigeon", load=lambda channel_id: None, missing=""))
    assert "pigeon" in DESTINATION_PLATFORMS
    assert list(DESTINATION_PLATFORMS) == sorted(DESTINATION_PLATFORMS)


def test_every_installed_destination_is_registered_by_its_package():
    platforms = {kind.platform for kind in kinds()}
    assert platforms >= {"git", "linkedin", "newsletter"}
    for platform in platforms:
        assert (ROOT / "apps" / "publishing" / platform).is_dir()


@pytest.mark.parametrize("platform", sorted(kind.platform for kind in kinds()))
def test_nothing_outside_a_destinations_package_names_it_but_its_installed_apps_line(platform):
    assert kind_for(platform) is not None
    app = f"apps.publishing.{platform}"
    hits = places_naming(platform, f"apps/publishing/{platform}")
    assert [hit for hit in hits if not installed_apps_line(hit, app)] == []
    assert len(hits) == 1, "the package is installed through one INSTALLED_APPS line"


def test_the_search_finds_a_kind_named_outside_its_package(tmp_path):
    probe = ROOT / "apps" / "core" / "zz_names_a_kind_probe.py"
    probe.write_text("# Posts go to LinkedIn.\n")
    try:
        assert places_naming("linkedin", "apps/publishing/linkedin") != []
        assert any("zz_names_a_kind_probe" in hit for hit in places_naming("linkedin", "apps/publishing/linkedin"))
    finally:
        probe.unlink()
