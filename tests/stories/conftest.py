"""The destinations' fakes the stories' tests send to, as the publishing tests set them up: LinkedIn's
local fake (tests/publishing/linkedin_fake.py) and a real SMTP server for newsletters."""

from tests.publishing.conftest import linkedin  # noqa: F401 (a fixture)
from tests.publishing.newsletter.conftest import smtp_server  # noqa: F401 (a fixture)
