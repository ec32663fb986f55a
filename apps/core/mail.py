import logging

from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse

logger = logging.getLogger(__name__)


def tell_account_admins(*, account, template: str, context: dict, page: tuple[str, int]) -> None:
    """E-mail the account's active admins `template`_subject.txt / `template`.txt, with `url` in the
    context: the Settings area's page `page` (URL name, object id). Called after the commit of what
    it reports; a mail server that fails is logged, and what it reports stands."""
    recipients = account.users.active_admins().values_list("email", flat=True)
    tell(recipients, template=template, context=context, page=page, whom=f"the admins of account {account.pk}")


def tell(recipients, *, template: str, context: dict, page: tuple[str, int], whom: str) -> None:
    """tell_account_admins() for other `recipients` (e-mail addresses); `whom` names them in the log."""
    recipients = [email for email in recipients if email]
    if not recipients:
        return
    url_name, object_id = page
    context = {**context, "url": f"{settings.SITE_URL}{reverse(url_name, args=[object_id])}"}
    subject = render_to_string(f"{template}_subject.txt", context).strip()
    body = render_to_string(f"{template}.txt", context)
    try:
        send_mail(subject, body, None, recipients)
    except Exception as exc:  # smtplib and socket errors vary by backend
        logger.warning("e-mail %s to %s not sent: %s", template, whom, exc)
