"""A multi-day date-only milestone that is not a freeze (a conference 1-4 April) closes
at the end of its last day (issue 29, item 4): its stored closes_at, the API's
``deadline`` and the sort key, moves from the end of its first day. A freeze keeps
closing when it begins. Written out here (not imported from releasecal.models) so the
migration stays what it is when the model changes again; the reverse puts the first
day back."""

import datetime as dt

from django.db import migrations

LAST_INSTANT = dt.datetime.max.replace(tzinfo=dt.UTC)


def _end_of_day(day, zone):
    from releasecal import tz

    try:
        return tz.end_of_day(day, zone)
    except OverflowError:
        return LAST_INSTANT
    except tz.InvalidZone:  # a zone this tzdata lacks: the day's end in UTC, as 0013 did
        return tz.end_of_day(day, "UTC") if day < dt.date.max else LAST_INSTANT


def _recompute(apps, *, last_day: bool) -> None:
    Milestone = apps.get_model("releasecal", "Milestone")
    rows = Milestone.objects.filter(at__isnull=True, ends_on__isnull=False, kind__is_freeze=False)
    for pk, on_date, ends_on, zone in rows.values_list("pk", "on_date", "ends_on", "zone").iterator():
        closes = _end_of_day(ends_on if last_day else on_date, zone)
        Milestone.objects.filter(pk=pk).update(closes_at=closes)


def forwards(apps, schema_editor):
    _recompute(apps, last_day=True)


def backwards(apps, schema_editor):
    _recompute(apps, last_day=False)


class Migration(migrations.Migration):
    dependencies = [
        ("releasecal", "0016_release_announcements_sig_contact"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
