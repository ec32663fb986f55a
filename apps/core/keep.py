from typing import Final


class Keep:
    """The type of KEEP: an argument left out, as distinct from None (which clears)."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Final = Keep()
"""Default of a service's optional arguments: leave that part as it is."""
