import datetime as dt

from django.db import migrations, models

LAST_INSTANT = dt.datetime.max.replace(tzinfo=dt.UTC)


def fill_closing(apps, schema_editor):
    """Every milestone's closes_at and passes_at, as releasecal.models.milestone_closes_at
    and milestone_passes_at compute them on save (the end of a day in the milestone's
    own zone under the tzdata this migration runs with)."""
    from releasecal import tz

    def end_of_day(day, zone):
        try:
            return tz.end_of_day(day, zone)
        except OverflowError:
            return LAST_INSTANT
        except tz.InvalidZone:  # a zone tzdata no longer has: the day's end in UTC
            return tz.end_of_day(day, "UTC") if day < dt.date.max else LAST_INSTANT

    Milestone = apps.get_model("releasecal", "Milestone")
    fields = ("pk", "at", "on_date", "ends_at", "ends_on", "zone")
    for milestone in Milestone.objects.only(*fields).iterator():
        closes = milestone.at if milestone.at is not None else end_of_day(milestone.on_date, milestone.zone)
        if milestone.ends_at is not None:
            passes = milestone.ends_at
        elif milestone.ends_on is not None:
            passes = end_of_day(milestone.ends_on, milestone.zone)
        else:
            passes = closes
        Milestone.objects.filter(pk=milestone.pk).update(closes_at=closes, passes_at=passes)


class Migration(migrations.Migration):
    dependencies = [
        ("releasecal", "0012_tracking_missed_freeze"),
    ]

    operations = [
        migrations.AddField(
            model_name="milestone",
            name="closes_at",
            field=models.DateTimeField(db_index=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name="milestone",
            name="passes_at",
            field=models.DateTimeField(db_index=True, editable=False, null=True),
        ),
        migrations.RunPython(fill_closing, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="milestone",
            name="closes_at",
            field=models.DateTimeField(
                db_index=True,
                editable=False,
                help_text="When it closes: at, or the end of on_date in zone (kept by save; the sort key)",
            ),
        ),
        migrations.AlterField(
            model_name="milestone",
            name="passes_at",
            field=models.DateTimeField(
                db_index=True,
                editable=False,
                help_text="When it is over: a window's end, else closes_at (kept by save; upcoming until then)",
            ),
        ),
        migrations.AlterModelOptions(
            name="milestone",
            options={"ordering": ["release", "closes_at", "id"]},
        ),
    ]
