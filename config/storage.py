"""Static files as whitenoise stores them (hashed, compressed), with a way out for a process started
before collectstatic ran."""

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    def stored_name(self, name):
        """A file the manifest does not list keeps its plain name (whitenoise serves it from the
        apps' static folders, WHITENOISE_USE_FINDERS) instead of failing the page that links it."""
        try:
            return super().stored_name(name)
        except ValueError:
            return name
