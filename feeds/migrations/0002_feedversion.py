"""The feed version (one row) and the triggers that change it on every write to a table
a feed shows, on PostgreSQL and SQLite (feeds/triggers.py says which tables and why).

Adding a table: nothing to do when its model is in a covered app (releasecal,
exceptions, feeds) — the post_migrate handler puts the trigger on it after the
``migrate`` that creates it, and tests/feeds/test_feeds_freshness.py checks that every
covered table has it. A table of another app that a feed starts to show: add the app to
``feeds.triggers.COVERED_APPS``. A model no feed shows and that is written often: add
it to ``feeds.triggers.NOT_SHOWN`` (and drop its trigger in a migration of your own)."""

from django.db import migrations, models

from feeds import triggers


def forwards(apps, schema_editor):
    triggers.install(schema_editor.connection, triggers.covered_tables(apps))


def backwards(apps, schema_editor):
    triggers.uninstall(schema_editor.connection, triggers.covered_tables(apps), function=True)


class Migration(migrations.Migration):
    dependencies = [
        ("feeds", "0001_feedtoken_from_releasecal"),
        ("releasecal", "0005_feedtoken_moves_to_feeds"),
        ("exceptions", "0003_imported_records_grant_and_days_unrecorded"),
    ]

    operations = [
        migrations.CreateModel(
            name="FeedVersion",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("version", models.CharField(max_length=32)),
            ],
            options={"db_table": "feeds_feedversion"},
        ),
        migrations.RunPython(forwards, backwards),
    ]
