from django.db import models
from django.utils import timezone


class JobAction(models.TextChoices):
    PUBLISH = "publish", "Publish"
    UPDATE = "update", "Update"
    UNPUBLISH = "unpublish", "Unpublish"


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


UNFINISHED = (JobState.QUEUED, JobState.RUNNING)


class PublicationJob(models.Model):
    """One action (publish, update, unpublish) of one post on its channel's destination: an outbox
    row, written in the transaction of the change that calls for it and carried out by a worker.

    A channel's jobs run one at a time in the order they were written (by id). `post_id` is not a
    foreign key: a deleted post's unpublish job outlives it (its title is kept in `title`).
    """

    channel = models.ForeignKey("channels.Channel", on_delete=models.CASCADE, related_name="publication_jobs")
    post_id = models.BigIntegerField(db_index=True)
    title = models.CharField(max_length=300, help_text="The post's title when the job was written.")
    action = models.CharField(max_length=16, choices=JobAction.choices)
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED)
    # The scheduled time a content plan's publish job serves: the content plan hands each scheduled
    # time of a post over once, however long its destination takes.
    scheduled_for = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    # A worker holds the job until then; a crashed worker's hold simply runs out.
    locked_until = models.DateTimeField(null=True, blank=True)
    # The worker incarnation that holds it (workers.worker_identity: node name and a start id;
    # empty outside a worker). A worker that comes back after a crash releases its dead former
    # self's jobs at once instead of waiting for their leases to run out.
    locked_by = models.CharField(max_length=200, blank=True, default="", db_default="", editable=False)
    last_error = models.TextField(blank=True)
    # What the destination names the result by (a commit id), where it lives in the
    # destination (a file's path) and, where the channel has one, its web address.
    reference = models.CharField(max_length=200, blank=True)
    path = models.CharField(max_length=500, blank=True)
    url = models.URLField(max_length=2000, blank=True)
    # The publication date the destination was given (kept across retries, so every attempt
    # writes the same file, and the post's published_at is this date once confirmed).
    published_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        verbose_name = "publication job"
        indexes = [
            # A channel's unfinished jobs, oldest first (the head of its queue).
            models.Index(
                fields=["channel", "id"],
                name="job_channel_unfinished",
                condition=models.Q(state__in=["queued", "running"]),
            ),
            # The sweeper's scan for due jobs.
            models.Index(
                fields=["next_attempt_at"], name="job_due", condition=models.Q(state__in=["queued", "running"])
            ),
            # A post's jobs, newest first (its publication in the API, where its file lives).
            models.Index(fields=["post_id", "-id"], name="job_post_newest"),
            models.Index(fields=["channel", "state", "-id"], name="job_channel_state"),
        ]

    def __str__(self) -> str:
        return f"{self.get_action_display()} “{self.title}”"

    @property
    def finished(self) -> bool:
        return self.state not in UNFINISHED
