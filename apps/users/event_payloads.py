"""The `data` of the user.* events (apps.core.events), described for the OpenAPI schema's webhooks:
the user, and those of the optional fields of UserEventDataSerializer that each kind always sends
(apps/users/services.py)."""

from apps.core.events import describe_payloads
from apps.users.events import UserEvent
from apps.users.serializers import UserEventDataSerializer


class _UserEventData(UserEventDataSerializer):
    # `data` of one user.* kind: the fields it `sends` become required, the others are left out.
    # (A comment: a docstring would be every subclass's description in the schema.)

    sends: tuple[str, ...] = ()

    def get_fields(self):
        fields = super().get_fields()
        for name in self.sends:
            fields[name].required = True
        return {name: field for name, field in fields.items() if name == "user" or name in self.sends}


class UserCreatedEventDataSerializer(_UserEventData):
    pass


class UserUpdatedEventDataSerializer(_UserEventData):
    sends = ("changed",)


class UserDeletedEventDataSerializer(_UserEventData):
    pass


class UserLoginEventDataSerializer(_UserEventData):
    sends = ("via",)


class UserRoleChangedEventDataSerializer(_UserEventData):
    sends = ("old_role", "new_role")


describe_payloads(
    {
        UserEvent.CREATED: UserCreatedEventDataSerializer,
        UserEvent.UPDATED: UserUpdatedEventDataSerializer,
        UserEvent.DELETED: UserDeletedEventDataSerializer,
        UserEvent.LOGIN: UserLoginEventDataSerializer,
        UserEvent.ROLE_CHANGED: UserRoleChangedEventDataSerializer,
    }
)
