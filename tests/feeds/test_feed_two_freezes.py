"""The event of a request naming two freezes (PRR + enhancements, one completion date)
is re-shown when either freeze moves: SEQUENCE rises and LAST-MODIFIED moves for a
change of the second freeze's deadline as for the first's.

The release (tests/conftest.py): enhancements freeze 19:00 PDT Thursday 13 June 2024; a
PRR freeze is added a week before, 19:00 PDT Thursday 6 June 2024."""

from __future__ import annotations

import datetime as dt

import icalendar
import pytest
from django.test import Client

from exceptions.services import RequestFields, exception_request_submit
from feeds import ical
from releasecal import tz
from releasecal.services import milestone_create, milestone_save


@pytest.fixture
def combined(release, kinds, kep, requester, enhancements_freeze):
    prr = milestone_create(
        release=release, kind=kinds["prr-freeze"], title="PRR Freeze",
        at=tz.parse_wall_time("2024-06-06 19:00", "America/Los_Angeles"),
    )  # fmt: skip
    return exception_request_submit(
        enhancement=kep, milestone=prr, also_milestone=enhancements_freeze, requester=requester,
        submitted_at=prr.deadline + dt.timedelta(hours=1),
        fields=RequestFields(days=10, enhancement_name=kep.title, stage="beta", sig="node"),
    )  # fmt: skip


def extension(combined) -> icalendar.Event:
    body = Client().get("/calendar/kep/2400.ics").content
    uid = f"releasecal-extension-{combined.pk}@releasecal.local"
    return next(e for e in icalendar.Calendar.from_ical(body).walk("VEVENT") if str(e["UID"]) == uid)


def move(milestone, at: dt.datetime, on: dt.datetime, monkeypatch) -> None:
    milestone.at = at
    with monkeypatch.context() as patch:
        patch.setattr(tz, "utc_now", lambda: on)
        milestone_save(milestone=milestone, actor_label="test")


@pytest.mark.parametrize("which", ["second", "first"])
def test_a_move_of_either_freeze_raises_the_combined_events_sequence(combined, monkeypatch, which):
    before = extension(combined)
    assert before["SEQUENCE"] == ical.SEQUENCE_FORMAT == 4
    freeze = combined.also_milestone if which == "second" else combined.milestone
    later = freeze.at + dt.timedelta(days=1)  # 19:00 PDT Friday 14 (or 7) June 2024
    move(freeze, later, on=dt.datetime(2024, 6, 1, 16, 0, tzinfo=dt.UTC), monkeypatch=monkeypatch)

    after = extension(combined)
    assert after["SEQUENCE"] == 5
    assert after["LAST-MODIFIED"].dt > before["LAST-MODIFIED"].dt
    shown = {
        "second": "Original Enhancements Freeze: 19:00 PDT Friday 14 June 2024 (02:00 UTC Saturday 15 June 2024) / "
        "14:00 AoE Friday 14 June 2024",
        "first": "Original PRR Freeze: 19:00 PDT Friday 7 June 2024 (02:00 UTC Saturday 8 June 2024) / 14:00 AoE "
        "Friday 7 June 2024",
    }[which]
    assert shown in str(after["DESCRIPTION"]).split("\n")
