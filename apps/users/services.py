"""Every change to a user: creation (with an invitation e-mail), updates under the account's
rules, deletion, invitation acceptance and sign-ins. Each writes its user.* webhook event in the
same transaction as the change."""

import logging
from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.tokens import default_token_generator
from django.core import signing
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from apps.accounts.models import Account
from apps.core.errors import Conflict, DomainError, Unavailable
from apps.core.keep import KEEP, Keep
from apps.core.mail import tell, tell_account_admins
from apps.core.validation import invalid_from_django
from apps.users.events import UserEvent
from apps.users.grants import check_grant
from apps.users.models import Role, Status, User, canonical_permissions
from apps.users.serializers import user_payload
from apps.webhooks.services import event_emit

logger = logging.getLogger(__name__)

# The fields a user update may change, in the order `changed` lists them in user.updated.
UPDATABLE_FIELDS = (
    "name",
    "role",
    "status",
    "permissions",
    "metadata",
    "timezone",
    "language",
    "notification_preferences",
)
INVITATION_SALT = "users.invitation"


def _emit(user: User, kind: str, **data) -> None:
    # Site operators belong to no account, so there is no account to send their events to.
    if user.account_id is not None:
        event_emit(account=user.account, kind=kind, data={"user": user_payload(user), **data})


def _validate(user: User, fields: Iterable[str]) -> None:
    """Run the model's validators on the given fields. The API has checked them already; this
    keeps the admin, commands and any other caller to the same rules."""
    fields = set(fields)
    try:
        user.clean_fields(exclude=[f.name for f in User._meta.fields if f.name not in fields])
    except ValidationError as exc:
        raise invalid_from_django(exc) from None


def _lock(user: User) -> User:
    """Lock the user's account, then the user, and return the user as stored.

    Every change that can remove an active admin takes the account's row lock first, so two
    concurrent demotions (or deletions) of an account's last two admins are serialized and
    the second sees the first; the fixed order (account, then user) rules out deadlocks.
    """
    if user.account_id is not None:
        Account.objects.select_for_update().only("pk").get(pk=user.account_id)
    return User.objects.select_for_update(of=("self",)).select_related("account").get(pk=user.pk)


def _ensure_another_active_admin(user: User, action: str) -> None:
    others = User.objects.active_admins().filter(account_id=user.account_id).exclude(pk=user.pk)
    if user.account_id is not None and not others.exists():
        raise DomainError(
            f"{user.email} is the account's last active admin and cannot be {action}; "
            "make another user an active admin first.",
            code="last_admin",
        )


# --- invitations -------------------------------------------------------------------------------


def _invitation_state(user: User) -> str:
    # Changes when the invitation is accepted (status, password) or sent again (timestamp), so a
    # link works once and only the newest link works.
    sent = user.invitation_sent_at.isoformat() if user.invitation_sent_at else ""
    return salted_hmac(INVITATION_SALT, f"{user.pk}:{user.status}:{user.password}:{sent}").hexdigest()


def invitation_token(user: User) -> str:
    return signing.dumps({"user": user.pk, "state": _invitation_state(user)}, salt=INVITATION_SALT)


def invitation_user(token: str) -> User | None:
    """The invited user a token is for, or None for a bad, expired, used or superseded token."""
    try:
        payload = signing.loads(token, salt=INVITATION_SALT, max_age=settings.INVITATION_TTL_DAYS * 86400)
    except signing.BadSignature:  # also SignatureExpired
        return None
    if not isinstance(payload, dict):
        return None
    user = User.objects.select_related("account").filter(pk=payload.get("user"), status=Status.INVITED).first()
    if user is None or not constant_time_compare(str(payload.get("state")), _invitation_state(user)):
        return None
    return user


def invitation_url(user: User) -> str:
    return f"{settings.SITE_URL}{reverse('invitation-accept')}?token={invitation_token(user)}"


def _send_invitation(user: User) -> None:
    user.mark_invited(timezone.now())
    user.save(update_fields=["status", "invitation_sent_at", "updated_at"])
    context = {
        "user": user,
        "organization": user.account.name if user.account_id else "",
        "url": invitation_url(user),
        "ttl_days": settings.INVITATION_TTL_DAYS,
    }
    # Sent inside the transaction: when the mail server refuses, the user is not created (or the
    # resend not recorded) and the caller can simply try again.
    _mail_user(
        user,
        "users/invitation_email",
        context,
        Unavailable(
            "The invitation e-mail could not be sent; nothing was changed. Try again later.",
            code="invitation_not_sent",
        ),
    )


def _mail_user(user: User, template: str, context: dict, refused: Unavailable) -> None:
    """E-mail `template`_subject.txt / `template`.txt to the user, or raise `refused` (logged) when
    the mail server does not take it."""
    subject = render_to_string(f"{template}_subject.txt", context).strip()
    try:
        send_mail(subject, render_to_string(f"{template}.txt", context), None, [user.email])
    except Exception as exc:  # smtplib and socket errors vary by backend
        logger.warning("e-mail %s to user %s not sent: %s", template, user.pk, exc)
        raise refused from None


@transaction.atomic
def user_invite(*, user: User) -> User:
    """Send the invitation (again) to a user who has not accepted one yet; earlier links stop working."""
    user = _lock(user)
    if user.status != Status.INVITED:
        raise DomainError(f"{user.email} is {user.status}, not invited.", code="invalid_status")
    _send_invitation(user)
    _emit(user, UserEvent.UPDATED, changed=["invitation_sent_at"])
    return user


@transaction.atomic
def invitation_accept(*, token: str, password: str) -> User:
    """Set the password chosen on the invitation page and make the user active."""
    found = invitation_user(token)
    if found is None:
        raise DomainError("This invitation link is invalid, expired or already used.", code="invitation_invalid")
    user = _lock(found)
    # Checked again under the lock: of two submissions of one link, the second finds it used.
    if invitation_user(token) is None:
        raise DomainError("This invitation link is invalid, expired or already used.", code="invitation_invalid")
    user.accept_invitation(password)
    user.save(update_fields=["password", "status", "updated_at"])
    _emit(user, UserEvent.UPDATED, changed=["status"])
    return user


# --- a first password, for users who have none (they signed in through SSO only) ----------------

# The cache key that keeps a user to one set-password e-mail per PASSWORD_LINK_INTERVAL.
PASSWORD_LINK_SENT = "users.password_link_sent:{pk}"  # noqa: S105 - a cache key


def password_link_url(user: User) -> str:
    """A one-time link to set a password: Django's password-reset token, which stops working once
    the password (or the last sign-in) changes, or after PASSWORD_RESET_TIMEOUT."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    path = reverse("password-set", kwargs={"uidb64": uid, "token": default_token_generator.make_token(user)})
    return f"{settings.SITE_URL}{path}"


def password_link_send(*, user: User) -> bool:
    """E-mail the user a link to set a first password; False when one went out less than
    PASSWORD_LINK_INTERVAL seconds ago (a session cannot flood the mailbox). Only the person who
    reads that mailbox can use it, which is the point: an SSO session proves no more than a key."""
    if user.has_usable_password():
        raise DomainError(f"{user.email} has a password already.", code="password_set")
    if not cache.add(PASSWORD_LINK_SENT.format(pk=user.pk), True, settings.PASSWORD_LINK_INTERVAL):
        return False
    context = {"user": user, "url": password_link_url(user), "ttl_minutes": settings.PASSWORD_RESET_TIMEOUT // 60}
    refused = Unavailable("The e-mail could not be sent. Try again later.", code="password_link_not_sent")
    try:
        _mail_user(user, "users/password_link_email", context, refused)
    except Unavailable:
        cache.delete(PASSWORD_LINK_SENT.format(pk=user.pk))  # not sent: asking again may send it
        raise
    return True


# --- create, update, delete --------------------------------------------------------------------


@transaction.atomic
def user_create(
    *,
    account: Account,
    email: str,
    name: str,
    role: str = Role.VIEWER,
    permissions: list[str] | None = None,
    metadata: dict | None = None,
    send_invitation: bool = True,
    granted_by: User | None = None,
) -> User:
    """Create a member of the account. With an invitation the user is `invited` until they
    set a password through the e-mailed link; without one they are `active` at once (and sign in
    through SSO until they have a password). A person (`granted_by`) gives no role or permission
    they do not hold."""
    email = User.objects.normalize_email(email.strip()).lower()
    conflict = Conflict(f"A user with the e-mail {email} already exists.", code="email_taken")
    if User.objects.filter(email__iexact=email).exists():
        raise conflict
    user = User(account=account, email=email, name=name.strip(), metadata=metadata or {}, status=Status.ACTIVE)
    user.set_role(role, permissions)
    user.set_unusable_password()
    _validate(user, ("email", "name", "role", "permissions", "metadata"))
    check_grant(granted_by, role=user.role, added=user.permissions)
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError:  # the same e-mail created concurrently, between the check and the insert
        raise conflict from None
    if send_invitation:
        _send_invitation(user)
    _emit(user, UserEvent.CREATED)
    return user


@transaction.atomic
def user_update(
    *,
    user: User,
    name: str | Keep = KEEP,
    role: str | Keep = KEEP,
    status: str | Keep = KEEP,
    permissions: list[str] | Keep = KEEP,
    metadata: dict | Keep = KEEP,
    timezone: str | Keep = KEEP,
    language: str | Keep = KEEP,
    notification_preferences: dict | Keep = KEEP,
    granted_by: User | None = None,
) -> User:
    """Change the given fields (KEEP, the default, leaves a field as it is).

    A new role resets the permissions to the role's defaults unless permissions are given too.
    `notification_preferences` may name only some channels; the others keep their setting. The
    last active admin of an account can be neither demoted nor deactivated, and a person
    (`granted_by`) gives no role or permission they do not hold. Nothing changed, nothing sent;
    otherwise user.updated (listing the changed fields) and, for a new role, user.role_changed.
    """
    user = _lock(user)
    before = {field: getattr(user, field) for field in UPDATABLE_FIELDS}
    was_active_admin = user.is_active_admin
    _apply_access(user, role=role, status=status, permissions=permissions)
    _apply_profile(
        user,
        name=name,
        metadata=metadata,
        timezone=timezone,
        language=language,
        notification_preferences=notification_preferences,
    )
    changed = [field for field in UPDATABLE_FIELDS if getattr(user, field) != before[field]]
    if not changed:
        return user
    _validate(user, changed)
    check_grant(
        granted_by,
        role=user.role if "role" in changed else None,
        added=set(user.permissions) - set(before["permissions"]),
    )
    if was_active_admin and not user.is_active_admin:
        _ensure_another_active_admin(user, "demoted" if "role" in changed else f"made {user.status}")
    user.save(update_fields=[*changed, "updated_at"])
    _emit(user, UserEvent.UPDATED, changed=changed)
    if "role" in changed:
        _emit(user, UserEvent.ROLE_CHANGED, old_role=before["role"], new_role=user.role)
    return user


def _apply_access(user: User, *, role: str | Keep, status: str | Keep, permissions: list[str] | Keep) -> None:
    if role is not KEEP and role != user.role:
        user.set_role(role, None if permissions is KEEP else permissions)
    elif permissions is not KEEP:
        user.permissions = canonical_permissions(permissions)
    if status is not KEEP and status != user.status:
        if status == Status.INVITED:
            raise DomainError(
                "A user cannot be set back to invited; send an invitation to an invited user instead.",
                code="invalid_status",
            )
        user.status = status


def _apply_profile(user: User, *, name: str | Keep, notification_preferences: dict | Keep, **fields) -> None:
    if name is not KEEP:
        user.name = name.strip()
    for field, value in fields.items():
        if value is not KEEP:
            setattr(user, field, value)
    if notification_preferences is not KEEP:
        user.notification_preferences = {**user.notification_preferences, **notification_preferences}


@transaction.atomic
def profile_update(
    *,
    user: User,
    name: str | Keep = KEEP,
    timezone: str | Keep = KEEP,
    language: str | Keep = KEEP,
    notification_preferences: dict | Keep = KEEP,
) -> User:
    """What users may change about themselves (KEEP leaves a field as it is)."""
    return user_update(
        user=user, name=name, timezone=timezone, language=language, notification_preferences=notification_preferences
    )


@transaction.atomic
def user_delete(*, user: User) -> None:
    """Delete the user; their API keys and SSO tokens go with them (the keys answer 401 at once).
    The account's last active admin cannot be deleted."""
    user = _lock(user)
    if user.is_active_admin:
        _ensure_another_active_admin(user, "deleted")
    _emit(user, UserEvent.DELETED)
    user.delete()


@transaction.atomic
def user_record_login(*, user: User, via: str) -> None:
    """Called by every sign-in path (SSO, admin site, sign-in page) once the session exists."""
    now = timezone.now()
    User.objects.filter(pk=user.pk).update(last_login=now)
    user.last_login = now
    _emit(user, UserEvent.LOGIN, via=via)


def sign_in_pause_report(*, email: str, failures: int, addresses: list[str], since, until) -> None:
    """Tell who looks after the user of `email` that its password sign-ins are paused until `until`,
    after `failures` failed since `since` from `addresses` (distinct, the latest last): the active
    admins of its account, or, for an operator, the active operators. Nobody for an e-mail that is no
    user's (the pause itself does not tell them apart)."""
    user = User.objects.select_related("account").filter(email__iexact=email).order_by("pk").first()
    if user is None:
        return
    context = {
        "user": user,
        "failures": failures,
        "address_count": len(addresses),
        "latest_addresses": addresses[::-1][:10],
        "since": since,
        "until": until,
    }
    template, page = "users/sign_in_paused_email", ("admin:users_user_change", user.pk)
    if user.account is not None:
        tell_account_admins(account=user.account, template=template, context=context, page=page)
    else:
        operators = User.objects.filter(is_superuser=True, status=Status.ACTIVE).values_list("email", flat=True)
        tell(operators, template=template, context=context, page=page, whom="the operators")
