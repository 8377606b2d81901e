"""FeedToken now lives in the feeds app (feeds.0001): forget it here, keep its table."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("releasecal", "0004_auditlog_immutable_in_postgresql"),
        ("feeds", "0001_feedtoken_from_releasecal"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="FeedToken")],
            database_operations=[],
        ),
    ]
