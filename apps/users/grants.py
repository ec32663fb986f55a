"""Nobody grants more than they hold: a person gives another user (or themselves) no role above
their own and no permission they do not hold. The users services apply it to every change a person
makes (the Settings area); an API key or a command is no person, and its own rules decide."""

from collections.abc import Iterable

from apps.core.errors import DomainError
from apps.users.models import ROLE_RANK, User, canonical_permissions


def grant_refusal(granted_by: User | None, *, role: str | None, added: Iterable[str]) -> str | None:
    """Why `granted_by` may not give `role` (None: no new role) and the permissions `added`, or None
    when they may: nobody grants more than they hold. An operator holds everything; None is no person
    (an API key, a command), whose own rules decide."""
    if granted_by is None or granted_by.is_superuser:
        return None
    if role is not None and ROLE_RANK[role] > ROLE_RANK.get(granted_by.role, -1):
        return f"As {_with_article(granted_by.role)} you cannot make anyone {_with_article(role)}."
    beyond = [
        permission for permission in canonical_permissions(list(added)) if permission not in granted_by.permissions
    ]
    if beyond:
        return f"You cannot grant permissions you do not hold: {', '.join(beyond)}."
    return None


def _with_article(role: str) -> str:
    return f"an {role}" if role[:1] in "aeiou" else f"a {role}"


def check_grant(granted_by: User | None, *, role: str | None, added: Iterable[str]) -> None:
    refusal = grant_refusal(granted_by, role=role, added=added)
    if refusal is not None:
        raise DomainError(refusal, code="grant_not_held")
