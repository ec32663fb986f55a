from django.db import models
from django.db.models.functions import Coalesce


def count_of(model: type[models.Model], link: str, **filters) -> Coalesce:
    """How many rows of `model` point (through the foreign key `link`) at the outer row and match
    `filters`, as an annotation: a correlated subquery per listed row, which an index on `link`
    (and the filtered columns) answers, where COUNT over a join would group every related row of
    every object before the page is cut."""
    rows = model.objects.filter(**{link: models.OuterRef("pk")}, **filters).order_by().values(link)
    return Coalesce(
        models.Subquery(rows.annotate(n=models.Count("pk")).values("n"), output_field=models.IntegerField()), 0
    )
