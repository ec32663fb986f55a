from dataclasses import dataclass, field

from django.core.management.base import CommandParser

from apps.channels.models import Channel
from apps.channels.services import PostsRecount, channel_posts_recount
from apps.core.commands import Failure, JsonCommand


@dataclass
class Report:
    fixed: bool
    checked: int = 0
    drifted: list[PostsRecount] = field(default_factory=list)


class Command(JsonCommand):
    help = (
        "Count the posts of every channel, report each channel whose stored posts_count differs (drift) and "
        "store the counted number. Safe beside running writers: each channel is locked while it is counted."
    )
    json_help = "print the report as JSON: checked, fixed and the drifted channels (errors on stderr)"

    def add_command_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Report drift without fixing it; exit with status 1 when any channel drifted.",
        )

    def run(self, options) -> Report:
        report = Report(fixed=not options["dry_run"])
        # One short transaction per channel: a long one would hold every channel's row at once.
        for channel_id in Channel.objects.order_by("id").values_list("id", flat=True).iterator():
            recount = channel_posts_recount(channel_id=channel_id, fix=report.fixed)
            if recount is None:  # deleted meanwhile
                continue
            report.checked += 1
            if recount.drifted:
                report.drifted.append(recount)
        if report.drifted and not report.fixed:
            raise Failure(
                "drift",
                f"{len(report.drifted)} of {report.checked} channel(s) drifted; run without --dry-run to fix them.",
                {"channel_ids": [recount.channel_id for recount in report.drifted]},
                result=report,
            )
        return report

    def as_json(self, report: Report) -> dict:
        return {
            "checked": report.checked,
            "fixed": report.fixed,
            "drifted": [
                {"channel_id": r.channel_id, "title": r.title, "stored": r.stored, "counted": r.counted}
                for r in report.drifted
            ],
        }

    def as_text(self, report: Report) -> str:
        action = "fixed" if report.fixed else "not fixed (dry run)"
        lines = [
            f"channel {r.channel_id} “{r.title}”: stored {r.stored}, counted {r.counted} "
            f"({r.counted - r.stored:+d}), {action}"
            for r in report.drifted
        ]
        fixed = " (fixed)" if report.drifted and report.fixed else ""
        lines.append(f"Recounted {report.checked} channel(s): {len(report.drifted)} drifted{fixed}.")
        return "\n".join(lines)
