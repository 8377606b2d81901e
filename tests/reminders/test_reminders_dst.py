"""Reminders across both DST transitions in Los Angeles and Berlin.

Sweeps run over the 50 hours around each transition (26 before, 24 after; every reminder
falls inside): at every minute within five minutes of a reminder's time, and every 15
minutes elsewhere. Each reminder must be sent exactly once, in the first minute at or after
its time: none skipped, none doubled, none an hour off. (A reminder sent early, late, an hour
off or twice is sent by a sweep at a minute that is not its own, dense or sparse, so the
sparse stretches lose nothing a sweep every minute would find; they make the test five
times faster.)
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter

import pytest
from django.core import mail

from releasecal import tz
from releasecal.models import MilestoneKind, Release
from releasecal.services import milestone_create
from reminders import services
from reminders.models import Delivery
from tests.support.reminders_helpers import channel, rule

UTC = dt.UTC
OFFSETS = "1d, 2h, 1h, 30m, 0, 1d@09:00, 1d@02:30, 1d@01:30"

# zone, the transition instant (UTC), and the local date it happens on.
TRANSITIONS = [
    ("America/Los_Angeles", dt.datetime(2024, 3, 10, 10, 0, tzinfo=UTC)),  # 02:00 PST -> 03:00 PDT
    ("America/Los_Angeles", dt.datetime(2024, 11, 3, 9, 0, tzinfo=UTC)),  # 02:00 PDT -> 01:00 PST
    ("Europe/Berlin", dt.datetime(2024, 3, 31, 1, 0, tzinfo=UTC)),  # 02:00 CET -> 03:00 CEST
    ("Europe/Berlin", dt.datetime(2024, 10, 27, 1, 0, tzinfo=UTC)),  # 03:00 CEST -> 02:00 CET
]


def _deadlines(zone: str, transition: dt.datetime) -> list[dt.datetime]:
    day = tz.local_date(transition, zone)
    return [
        transition + dt.timedelta(minutes=30),  # half an hour after the clocks change
        transition + dt.timedelta(hours=1),
        tz.parse_wall_time(f"{day.isoformat()} 19:00", zone),  # the evening of the change
        tz.parse_wall_time(f"{(day + dt.timedelta(days=1)).isoformat()} 00:30", zone),  # just after midnight
    ]


def _minutes(start: dt.datetime, end: dt.datetime, due: list[dt.datetime]) -> list[dt.datetime]:
    """Every 15th minute from ``start`` to ``end``, and every minute within five of a due time."""
    first = start.replace(second=0, microsecond=0)
    count = int((end - first).total_seconds() // 60)
    minutes = {first + dt.timedelta(minutes=n) for n in range(0, count + 1, 15)}
    for at in due:
        at_minute = at.replace(second=0, microsecond=0)
        minutes.update(at_minute + dt.timedelta(minutes=n) for n in range(-5, 6))
    return sorted(m for m in minutes if first <= m <= end)


def _simulate(minutes: list[dt.datetime]) -> list[tuple[int, dt.datetime]]:
    sends: list[tuple[int, dt.datetime]] = []
    for minute in minutes:

        def send_now(queued: int | list[int], minute=minute) -> None:
            ids = queued if isinstance(queued, list) else [queued]  # a digest: rows due together
            if services.deliveries_send(delivery_ids=ids, now=minute) == "sent":
                sends.extend((delivery_id, minute) for delivery_id in ids)

        services.deliveries_sweep(now=minute, enqueue=send_now)
    return sends


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize(("zone", "transition"), TRANSITIONS, ids=lambda v: str(v)[:19])
def test_reminders_across_a_dst_transition_fire_exactly_once_on_time(kinds, zone, transition):
    rule(channel("email", "team", to=["team@example.com"]), offsets=OFFSETS)
    release = Release.objects.create(
        slug="dst", name="DST", zone=zone, start_date=transition.date() - dt.timedelta(days=30)
    )
    freeze = MilestoneKind.objects.get(slug="code-freeze")
    start = transition - dt.timedelta(hours=26)  # "1d@01:30" of a deadline just after the change
    for n, deadline in enumerate(_deadlines(zone, transition)):
        milestone = milestone_create(release=release, kind=freeze, title=f"Freeze {n}", at=deadline)
        # The hook ran at the real "now" (2024 is past); schedule as of the simulation start.
        services.deliveries_sync_for_milestone(milestone=milestone, now=start - dt.timedelta(days=2))
    rows = {d.pk: d for d in Delivery.objects.all()}
    assert len(rows) == 4 * 8
    assert all(d.state == Delivery.State.PENDING for d in rows.values())
    end = transition + dt.timedelta(hours=24)
    assert all(start < d.due_at < end for d in rows.values()), "every reminder falls in the simulated 48 hours"

    minutes = _minutes(start, end, [d.due_at for d in rows.values()])
    assert len(minutes) < (end - start).total_seconds() / 60 / 4
    sends = _simulate(minutes)

    per_delivery = Counter(delivery_id for delivery_id, _ in sends)
    assert set(per_delivery) == set(rows), "every reminder sent"
    assert max(per_delivery.values()) == 1, "none sent twice"
    for delivery_id, at in sends:
        late = at - rows[delivery_id].due_at
        assert dt.timedelta(0) <= late < dt.timedelta(minutes=1), (rows[delivery_id].offset, late)
    emails = Counter(int(n) for n in re.findall(r"releasecal delivery #(\d+)", "".join(m.body for m in mail.outbox)))
    assert emails == Counter(dict.fromkeys(rows, 1))
    assert set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.SENT}


def test_relative_offsets_count_real_hours_across_the_change():
    # Deadline 19:00 PDT Sunday 10 March 2024 (02:00 UTC Monday): "1d" before is exactly
    # 24 hours earlier, which on the wall is 18:00 PST Saturday (the day was 23 hours).
    from reminders.offsets import parse_offset

    zone = "America/Los_Angeles"
    deadline = tz.parse_wall_time("2024-03-10 19:00", zone)
    due = parse_offset("1d").due(deadline, zone)
    assert due == deadline - dt.timedelta(hours=24)
    assert tz.render_in_zone(due, zone) == "18:00 PST Saturday 9 March 2024"
    # "1d@19:00" keeps the wall clock instead: 19:00 PST Saturday, 23 hours before.
    assert tz.render_in_zone(parse_offset("1d@19:00").due(deadline, zone), zone) == "19:00 PST Saturday 9 March 2024"


def test_day_before_wall_times_in_berlin_keep_the_local_clock():
    from reminders.offsets import parse_offset

    zone = "Europe/Berlin"
    deadline = tz.parse_wall_time("2024-10-28 09:00", zone)  # Monday after the change (CET)
    due = parse_offset("1d@09:00").due(deadline, zone)
    assert tz.render_in_zone(due, zone) == "09:00 CET Sunday 27 October 2024"
    # 02:30 on 27 October happened twice in Berlin; the first (CEST, 00:30 UTC) counts.
    assert parse_offset("1d@02:30").due(deadline, zone) == dt.datetime(2024, 10, 27, 0, 30, tzinfo=UTC)
