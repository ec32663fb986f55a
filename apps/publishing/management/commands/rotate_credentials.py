from django.apps import apps
from django.db import models, transaction

from apps.core import crypto
from apps.core.commands import Failure, JsonCommand

SUFFIX = "_encrypted"


def encrypted_fields() -> list[tuple[type[models.Model], str]]:
    """Every stored credential: the text fields named *_encrypted, of every model (a destination
    added later is covered without a line here)."""
    return [
        (model, field.name)
        for model in apps.get_models()
        for field in model._meta.concrete_fields
        if field.name.endswith(SUFFIX) and isinstance(field, models.TextField)
    ]


class Command(JsonCommand):
    help = (
        "Encrypt every stored credential again with the newest of FERNET_KEYS. Rotating a key: put the new key "
        "first in FERNET_KEYS (restart), run this, then remove the old key."
    )
    json_help = "print what was done as JSON (errors on stderr)"

    def run(self, options) -> dict:
        counts, unreadable = {}, []
        for model, name in encrypted_fields():
            label = f"{model._meta.label}.{name}"
            counts[label] = 0
            for pk in model.objects.exclude(**{name: ""}).values_list("pk", flat=True):
                with transaction.atomic():
                    row = model.objects.select_for_update().filter(pk=pk).values_list(name, flat=True).first()
                    if not row:
                        continue
                    try:
                        model.objects.filter(pk=pk).update(**{name: crypto.reencrypt(row)})
                    except crypto.CredentialUnreadable:
                        unreadable.append(f"{label} of {model._meta.verbose_name} {pk}")
                        continue
                counts[label] += 1
        report = {"reencrypted": counts, "unreadable": unreadable}
        if unreadable:
            raise Failure(
                "unreadable_credentials",
                "No key of FERNET_KEYS opens these (keep the old key until they are entered again): "
                + ", ".join(unreadable),
                {"unreadable": unreadable},
                result=report,
            )
        return report

    def as_json(self, report: dict) -> dict:
        return report

    def as_text(self, report: dict) -> str:
        counts = report["reencrypted"].items()
        return "\n".join(f"{label}: {count} re-encrypted with the newest key" for label, count in counts)
