"""The worker that holds a job (PublicationJob.locked_by), so a worker back from a crash releases
its former self's jobs at once. On SQLite, adding the column remakes the table, which fails while
triggers name it: publishing 0002's are dropped around it and created again."""

import importlib

from django.db import migrations, models

channel_versions = importlib.import_module("apps.channels.migrations.0002_channel_version")
job_triggers = importlib.import_module("apps.publishing.migrations.0002_channel_version")


class Migration(migrations.Migration):

    dependencies = [
        ('publishing', '0002_channel_version'),
    ]

    operations = channel_versions.around_sqlite_table_change(job_triggers.TABLE, [
        migrations.AddField(
            model_name='publicationjob',
            name='locked_by',
            field=models.CharField(blank=True, db_default='', default='', editable=False, max_length=200),
        ),
    ], job_triggers.SQLITE_CREATE)
