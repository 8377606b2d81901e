"""Request windows per kind, in hours: docs freeze 24 h, the others 72 h.

A release that kept the old default window (3 days) takes the kinds' defaults; one whose
team had set another number of days keeps that window, in hours, for every kind that
allows exceptions (its stored policy does not change under it)."""

from django.db import migrations, models

from releasecal.defaults import DEFAULT_REQUEST_WINDOW_HOURS, REQUEST_WINDOW_HOURS

OLD_DEFAULT_DAYS = 3


def forwards(apps, schema_editor):
    MilestoneKind = apps.get_model("releasecal", "MilestoneKind")
    Release = apps.get_model("releasecal", "Release")
    for slug, hours in REQUEST_WINDOW_HOURS.items():
        MilestoneKind.objects.filter(slug=slug, request_window_hours=DEFAULT_REQUEST_WINDOW_HOURS).update(
            request_window_hours=hours
        )
    slugs = list(MilestoneKind.objects.filter(allows_exceptions=True).values_list("slug", flat=True))
    for release in Release.objects.exclude(exception_window_days=OLD_DEFAULT_DAYS):
        release.request_window_hours = dict.fromkeys(slugs, release.exception_window_days * 24)
        release.save(update_fields=["request_window_hours"])


def backwards(apps, schema_editor):
    Release = apps.get_model("releasecal", "Release")
    for release in Release.objects.all():
        hours = (release.request_window_hours or {}).get("enhancements-freeze")
        release.exception_window_days = hours // 24 if isinstance(hours, int) else OLD_DEFAULT_DAYS
        release.save(update_fields=["exception_window_days"])


class Migration(migrations.Migration):
    dependencies = [
        ("releasecal", "0014_milestone_kind_label"),
        # The default kinds are created there: their windows are set here, after them.
        ("exceptions", "0002_groups_and_kinds"),
    ]

    operations = [
        migrations.AddField(
            model_name="milestonekind",
            name="request_window_hours",
            field=models.PositiveSmallIntegerField(
                db_default=72,
                default=72,
                help_text="A request for an exception may arrive at most this many hours after the freeze closes "
                "(a release may set its own)",
            ),
        ),
        migrations.AddField(
            model_name="release",
            name="request_window_hours",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="This release's own request window per kind, in hours after the freeze: "
                '{"docs-freeze": 48}; a kind not named here keeps the kind\'s default.',
            ),
        ),
        migrations.RunPython(forwards, backwards),
        migrations.RemoveField(model_name="release", name="exception_window_days"),
    ]
