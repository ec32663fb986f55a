"""Reads of users that more than one caller shares. Every lookup is within one account: another
account's user is never found."""

from django.db.models import Q, QuerySet

from apps.core.scoping import of_account
from apps.users.models import User, parse_user_id


def user_of_account(*, account_id: int, user_id: object = None, email: str | None = None) -> User | None:
    """The account's user with this id (a user id as the API writes it, or an int) or this e-mail
    (any case); None when there is none."""
    users = of_account(User.objects.select_related("account"), account_id)
    if email is not None:
        return users.filter(email__iexact=email).first()
    pk = parse_user_id(user_id)
    return users.filter(pk=pk).first() if pk else None


def users_of_account(
    *, account_id: int, role: str | None = None, status: str | None = None, search: str = ""
) -> QuerySet[User]:
    """The users list, in creation order, with its filters; an empty value is no filter."""
    users = of_account(User.objects.order_by("id"), account_id)
    if role:
        users = users.filter(role=role)
    if status:
        users = users.filter(status=status)
    if search := search.strip():
        users = users.filter(Q(name__icontains=search) | Q(email__icontains=search))
    return users
