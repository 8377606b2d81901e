"""SEQUENCE and LAST-MODIFIED from what was published before, not from which row changed.

An event's look depends on many rows (the milestone, its release's zone and policy, the
request, its decision, the KEP's title) and on our wording. Instead of bumping a counter
in every place that can change one of them, the feed remembers, per UID, a hash of what
it last published (``feeds.models.PublishedEvent``):

- ``timing``: DTSTART, DTEND, STATUS and SUMMARY. When it changes, SEQUENCE rises by one
  (RFC 5545 §3.8.7.4: a client must re-show the event) and LAST-MODIFIED moves.
- ``shown``: every property a client shows (the timing ones plus DESCRIPTION, URL,
  CATEGORIES). When only it changes, LAST-MODIFIED moves.

SEQUENCE is never below the data-derived number the writer computes (``Milestone.sequence``
and the extension formula in feeds/ical.py) plus ``ical.SEQUENCE_FORMAT``, the writer-format
number: raising it (a new wording) raises every event's SEQUENCE. LAST-MODIFIED (and
DTSTAMP) is the newest data timestamp when that moved with the change, else the time the
change was first published; it always increases. Once recorded, the same data gives
the same bytes, so cached feeds stay valid (the table is not one the feed version
watches: recording only writes down what every build of this version computes alike).

One query per feed build (the rows of its UIDs), plus one write per event that changed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib

from feeds import ical
from feeds.models import PublishedEvent
from releasecal import tz

SECOND = dt.timedelta(seconds=1)


def _digest(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(part) for part in parts).encode()).hexdigest()


def fingerprints(event: ical.CalendarEvent) -> tuple[str, str]:
    def when(value):
        if value is None:
            return ""
        if isinstance(value, dt.datetime):
            return f"{tz.isoformat_utc(value)}@{tz.iana_name(event.zone)}"
        return value.isoformat()

    timing = _digest(when(event.start), when(event.end), event.status, event.summary)
    shown = _digest(timing, event.description, event.url, *event.categories)
    return timing, shown


def publish(events: list[ical.CalendarEvent]) -> list[ical.CalendarEvent]:
    """The events with SEQUENCE and LAST-MODIFIED from the ledger, recording changes:
    one query to read, at most one to insert and one to update, however many events."""
    rows = {row.uid: row for row in PublishedEvent.objects.filter(uid__in=[e.uid for e in events])}
    now = tz.utc_now().replace(microsecond=0)
    new: list[PublishedEvent] = []
    changed: list[PublishedEvent] = []
    result = []
    for event in events:
        timing, shown = fingerprints(event)
        floor = event.sequence + ical.SEQUENCE_FORMAT
        row = rows.get(event.uid)
        if row is None:
            row = PublishedEvent(
                uid=event.uid, timing=timing, shown=shown, sequence=floor, last_modified=event.last_modified
            )
            rows[event.uid] = row
            new.append(row)
        elif row.timing != timing or row.shown != shown or row.sequence < floor:
            moved = row.timing != timing or row.shown != shown
            if moved:
                last_modified = event.last_modified if event.last_modified > row.last_modified else now
                row.last_modified = max(last_modified, row.last_modified + SECOND)
            row.sequence = max(row.sequence + (row.timing != timing), floor)
            row.timing, row.shown = timing, shown
            changed.append(row)
        result.append(dataclasses.replace(event, sequence=row.sequence, last_modified=row.last_modified))
    if new:
        # A build running at the same time computes the same rows from the same data.
        PublishedEvent.objects.bulk_create(new, ignore_conflicts=True)
    if changed:
        PublishedEvent.objects.bulk_update(changed, ["timing", "shown", "sequence", "last_modified"])
    return result
