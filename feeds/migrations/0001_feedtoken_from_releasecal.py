"""FeedToken moves from the releasecal app to feeds: state only, the table stays
``releasecal_feedtoken`` (created by releasecal.0002)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("releasecal", "0004_auditlog_immutable_in_postgresql"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="FeedToken",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "label",
                            models.CharField(
                                blank=True, help_text='Where it is used, e.g. "work laptop"', max_length=100
                            ),
                        ),
                        ("token_hash", models.CharField(editable=False, max_length=64, unique=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("last_used_at", models.DateTimeField(blank=True, editable=False, null=True)),
                        ("revoked_at", models.DateTimeField(blank=True, editable=False, null=True)),
                        (
                            "replaced_by",
                            models.OneToOneField(
                                blank=True,
                                editable=False,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="replaces",
                                to="feeds.feedtoken",
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="feed_tokens",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={"db_table": "releasecal_feedtoken", "ordering": ["user", "-created_at", "-id"]},
                ),
            ],
            database_operations=[],
        ),
    ]
