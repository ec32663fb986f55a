from django.core.management.base import BaseCommand, CommandError

from apps.channels.models import Channel
from apps.channels.services import channel_posts_recount


class Command(BaseCommand):
    help = (
        "Count the posts of every channel, report each channel whose stored posts_count differs (drift) and "
        "store the counted number. Safe beside running writers: each channel is locked while it is counted."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Report drift without fixing it; exit with status 1 when any channel drifted.",
        )

    def handle(self, *args, dry_run: bool = False, **options):
        checked = drifted = 0
        # One short transaction per channel: a long one would hold every channel's row at once.
        for channel_id in Channel.objects.order_by("id").values_list("id", flat=True).iterator():
            recount = channel_posts_recount(channel_id=channel_id, fix=not dry_run)
            if recount is None:  # deleted meanwhile
                continue
            checked += 1
            if recount.drifted:
                drifted += 1
                action = "not fixed (dry run)" if dry_run else "fixed"
                self.stdout.write(
                    f"channel {recount.channel_id} “{recount.title}”: stored {recount.stored}, "
                    f"counted {recount.counted} ({recount.counted - recount.stored:+d}), {action}"
                )
        if dry_run and drifted:
            raise CommandError(f"{drifted} of {checked} channel(s) drifted; run without --dry-run to fix them.")
        fixed = "" if not drifted else " (fixed)"
        self.stdout.write(f"Recounted {checked} channel(s): {drifted} drifted{fixed}.")
