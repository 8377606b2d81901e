"""The iCal writer: milestones and extension requests in, RFC 5545 bytes out.

Everything here is a pure function of the data it is given (no clock, no queries), so
the same data gives a byte-identical feed:

- UID ``releasecal-milestone-<id>@<SITE_HOST>`` and ``releasecal-extension-<request id>@<SITE_HOST>``.
- DTSTAMP = LAST-MODIFIED = the newest timestamp of the rows the event is built from.
- Timed events carry ``DTSTART;TZID=<native zone>``, except one with an instant at a
  wall time a fold repeats: ``DTSTART:...Z`` (UTC), the zone named in its description;
  AoE is written as ``Etc/GMT+12``
  (see docs/feeds.md) with one canonical VTIMEZONE per TZID used (feeds/vtimezone.py:
  the same bytes in every feed, covering 1970-2099). Date-only milestones are ``VALUE=DATE`` all-day events with
  an exclusive DTEND.
- SEQUENCE of a milestone event is ``Milestone.sequence`` (bumped by
  ``milestone_save`` whenever a shown field changes). SEQUENCE of an extension event is
  ``milestone.sequence + (revisions - 1) + (0 if pending else 1)`` (for a request naming
  two freezes, ``milestone.sequence`` is the sum of both freezes'): every term only
  grows (revisions are append-only, a milestone's sequence only goes up) or is
  outweighed (``+ 2 * corrections``: a decision's corrections and reopens are
  append-only, and a reopen, the one way back to pending, adds 2 where pending takes 1
  away), and each change a client sees (the freeze moved, days amended, approved,
  rejected, withdrawn, a decision corrected or reopened) raises one of them.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

import icalendar

from exceptions.models import days_label
from exceptions.selectors import Deadline
from exceptions.services import default_granted_until, request_window_closes, request_window_text
from feeds.vtimezone import vtimezone
from releasecal import tz

logger = logging.getLogger(__name__)

PRODID = "-//releasecal//releasecal calendar feeds 1.0//EN"
REFRESH = dt.timedelta(hours=1)
# Changing what the writer emits must change every cache key: bump this.
FORMAT_VERSION = "13"
# Part of every event's SEQUENCE (feeds/published.py): raise it by one whenever the
# wording of summaries or descriptions changes, so every client re-reads every event.
# 1: deadlines worded by tz.render_deadline (issue 16); 2: rejections, no "(SIG )" (29);
# 3: fold instants in UTC, said in the description (29); 4: a multi-day event ends on its last day.
SEQUENCE_FORMAT = 4


def _per_instant(function):
    """``function(instant, zone)``, remembered per (UTC instant, zone): a feed says the
    same few deadlines in words hundreds of times (300 extensions of one freeze share
    its original deadline and five granted ones). Keyed by the UTC instant, never the
    aware value (equal instants in one zone compare equal across a fold); emptied by
    ``tz.zone_rules_reload`` like every cache of the zone rules."""

    @tz.rules_cache_register
    @lru_cache(maxsize=4096)
    def remembered(utc: dt.datetime, zone: str):
        return function(utc, zone)

    def per_instant(instant: dt.datetime, zone: str):
        try:
            utc = tz.to_utc(instant)
        except OverflowError:  # a stored instant at the very ends of ``datetime``
            return function(instant, zone)
        return remembered(utc, zone)

    return per_instant


_render = _per_instant(tz.render)
_render_deadline = _per_instant(tz.render_deadline)
_render_deadline_in_zone = _per_instant(tz.render_deadline_in_zone)
_render_with_aoe = _per_instant(tz.render_with_aoe)
_in_fold = _per_instant(tz.in_fold)
_is_day_start = _per_instant(tz.is_day_start)


@dataclass(frozen=True)
class CalendarEvent:
    uid: str
    summary: str
    description: str
    sequence: int
    last_modified: dt.datetime
    status: str  # CONFIRMED, TENTATIVE or CANCELLED
    start: dt.datetime | dt.date
    zone: str = "UTC"  # native zone of a timed event (tz module name; AoE allowed)
    end: dt.datetime | dt.date | None = None
    url: str = ""
    categories: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_all_day(self) -> bool:
        return not isinstance(self.start, dt.datetime)

    def sort_key(self) -> tuple[dt.datetime, str]:
        if isinstance(self.start, dt.datetime):
            return (tz.to_utc(self.start), self.uid)
        try:
            return (tz.start_of_day(self.start, self.zone), self.uid)
        except OverflowError:  # a stored date at the very ends of ``date``
            return (dt.datetime.combine(self.start, dt.time(), tzinfo=dt.UTC), self.uid)


@dataclass(frozen=True)
class Move:
    """One earlier place of a milestone (from its audit log): where it was before a
    change that moved it, and when that change was made."""

    at: dt.datetime | None
    on_date: dt.date | None
    zone: str
    changed_at: dt.datetime


def move_line(move: Move) -> str:
    """``Moved from 19:00 PDT Wednesday 10 July 2024 on 26 June 2024`` (the earlier
    deadline in its zone then, tz's deadline words; the day of the change in that zone)."""
    was = _render_deadline_in_zone(move.at, move.zone) if move.at is not None else tz.render_date(move.on_date)
    try:
        day = tz.local_date(move.changed_at, move.zone)
    except OverflowError:
        day = tz.to_utc(move.changed_at).date()
    return f"Moved from {was} on {tz.render_day_of_change(day)}"


def uid(kind: str, pk: int, host: str) -> str:
    return f"releasecal-{kind}-{pk}@{host}"


def _aoe_line(instant: dt.datetime, zone: str) -> str | None:
    if tz.shown_zone(zone) in (tz.AOE, "UTC"):
        return None  # the native line already says AoE (or the instant is shown in UTC only)
    return "AoE: " + _render_deadline_in_zone(instant, tz.AOE)


def _utc(instant: dt.datetime) -> dt.datetime:
    return tz.to_utc(instant).replace(microsecond=0)


def _shown_zone(instant: dt.datetime, zone: str) -> str:
    """``zone``, or UTC for a stored instant outside 1970-2099 (a row written by SQL or
    before the range check): our VTIMEZONEs cover only that range, and year 1 or 9999
    may not even convert to a zone. Such an event is shown in UTC, never failing the feed.
    A stored zone this tzdata lacks is shown in UTC too (``tz.shown_zone``; the
    description carries ``tz.zone_warning``)."""
    return tz.shown_zone(zone) if tz.EARLIEST <= tz.to_utc(instant) < tz.LATEST else "UTC"


def _deadline(milestone) -> dt.datetime | None:
    """The milestone's deadline, None when a stored date is too far out to be one
    (the end of 31 December 9999 is past what ``datetime`` holds)."""
    try:
        return milestone.deadline
    except OverflowError:
        return None


def _summary_suffix(instant: dt.datetime, zone: str) -> str:
    """Clients show an event in the viewer's zone: where that misleads, the summary says
    the deadline in words (releasecal.tz's deadline wording). An AoE deadline, and any
    deadline at the first instant of a local day, which people mean as the end of the day
    before: ``[1.35] Code Freeze (end of Thursday 6 November 2025 AoE)``. Others keep the
    bare title: the client's clock time is the deadline's own."""
    if tz.shown_zone(zone) == tz.AOE or _is_day_start(instant, zone) or _in_fold(instant, zone):
        return f" ({_render_deadline_in_zone(instant, zone)})"
    return ""


def _in_a_fold(zone: str, *instants: dt.datetime | None) -> bool:
    """Is one of the instants at a wall time its zone shows twice (a fall-back fold)?"""
    return tz.shown_zone(zone) != "UTC" and any(i is not None and _in_fold(i, zone) for i in instants)


def _fold_line(zone: str, *instants: dt.datetime | None) -> list[str]:
    """The line saying why an event in a fold is written in UTC (docs/feeds.md)."""
    if not _in_a_fold(zone, *instants):
        return []
    return [
        f"Time zone: {zone}. This clock time occurs twice that night (the clocks go back), "
        "so the calendar entry is written in UTC: every calendar shows the right one."
    ]


# --------------------------------------------------------------------- milestones


def milestone_rules(milestone) -> str:
    """The rule that applies to a milestone, as one sentence (empty when none)."""
    kind = milestone.kind
    if kind.allows_exceptions:
        if _deadline(milestone) is None:
            return ""
        closes = request_window_closes(milestone)
        return (
            f"Exceptions may be requested until {_render_deadline(closes, milestone.zone)} "
            f"({request_window_text(milestone)})."
        )
    if kind.is_freeze:
        return "This freeze cannot be extended by an exception."
    return ""


def milestone_event(
    milestone, *, host: str, site_url: str, moves: tuple[Move, ...] = (), weeks: int | None = None
) -> CalendarEvent:
    """The event of one milestone; ``moves``: its earlier places, oldest first (the slip
    history shown in the description); ``weeks``: how many weeks the release's schedule
    counts (its highest ``Milestone.week``), for the countdown "Week 9 of 15" in the
    summary of a milestone that has a week."""
    release = milestone.release
    lines = [f"{milestone.title}, {release.name or release.slug}"]
    if milestone.cancelled:
        lines.append("CANCELLED: this milestone was removed from the schedule.")
    zone = milestone.zone
    if milestone.at is not None:
        zone = _shown_zone(milestone.at, milestone.zone)
        if milestone.ends_at is not None:
            zone = _shown_zone(milestone.ends_at, zone)
        lines.append("When: " + _render_deadline(milestone.at, zone))
        if tz.zone_warning(milestone.zone):
            lines.append(f"Note: {tz.zone_warning(milestone.zone)}.")
        aoe = _aoe_line(milestone.at, zone)
        if aoe:
            lines.append(aoe)
        if milestone.ends_at is not None:
            lines.append("Until: " + _render(milestone.ends_at, zone))
        lines.extend(_fold_line(zone, milestone.at, milestone.ends_at))
        start: dt.datetime | dt.date = tz.to_zone(milestone.at, zone)
        end: dt.datetime | dt.date | None = tz.to_zone(milestone.ends_at, zone) if milestone.ends_at else None
    else:
        last_day = milestone.ends_on or milestone.on_date
        when = tz.render_date(milestone.on_date)
        if milestone.ends_on:
            when += " to " + tz.render_date(milestone.ends_on)
        lines.append(f"When: all day {when} ({milestone.zone})")
        # When it closes (releasecal.models.milestone_closes_at, as the API's deadline):
        # a conference or a window of dates on its last day, a freeze when it begins.
        deadline = _deadline(milestone)
        if deadline is not None:
            lines.append("Ends: " + _render_deadline(deadline, milestone.zone))
            aoe = _aoe_line(deadline, milestone.zone)
            if aoe:
                lines.append(aoe)
        start = milestone.on_date
        end = last_day + dt.timedelta(days=1) if last_day < dt.date.max else last_day
    lines.extend(move_line(move) for move in moves)
    rules = milestone_rules(milestone)
    if rules:
        lines.append(rules)
    if milestone.description:
        lines.append(milestone.description)
    page = f"{site_url}/releases/{release.slug}/"
    lines.append("Link: " + (milestone.link or page))
    if milestone.link:
        lines.append("Schedule: " + page)
    summary = f"[{release.slug}] {milestone.title}"
    if milestone.week is not None and weeks:
        summary = f"[{release.slug}] Week {milestone.week} of {weeks}: {milestone.title}"
    if milestone.at is not None:
        summary += _summary_suffix(milestone.at, zone)
    if milestone.cancelled:
        summary += " (cancelled)"
    return CalendarEvent(
        uid=uid("milestone", milestone.pk, host),
        summary=summary,
        description="\n".join(lines),
        sequence=milestone.sequence,
        last_modified=_utc(milestone.updated_at),
        status="CANCELLED" if milestone.cancelled else "CONFIRMED",
        start=start,
        end=end,
        zone=zone,
        url=milestone.link or page,
        categories=(milestone.kind_name,),
    )


# --------------------------------------------------------------------- extensions


def extension_sequence(*, milestone_sequence: int, revisions: int, state: str, corrections: int = 0) -> int:
    """Monotonic: see the module docstring. ``corrections``: the decision's corrections
    and reopens; each adds 2, so a reopen (decided back to pending, -1) still raises it."""
    return milestone_sequence + max(revisions - 1, 0) + 2 * corrections + (0 if state == "pending" else 1)


def extension_event(
    request, *, deadline: Deadline, revisions: int, host: str, site_url: str, corrections: int = 0
) -> CalendarEvent:
    """The event of one exception request.

    ``deadline`` is the request's effective deadline (``exceptions.selectors``:
    ``request_deadlines``), required: the feed states it and never works one out.
    approved: at that deadline (the grant in the granted zone, or the freeze when the
    freeze superseded the grant); pending: TENTATIVE at the time the release team would
    grant by default; rejected / withdrawn: CANCELLED, so a client that had the event
    removes it.
    """
    milestone = request.milestone
    release = request.release
    kep = request.enhancement
    state = request.state
    decision = getattr(request, "decision", None) if state in ("approved", "rejected") else None
    approved = state == "approved" and decision is not None
    unrecorded = approved and not deadline.grant_recorded
    superseded = approved and deadline.superseded
    asked = request.days is not None  # None: read from exceptions.yaml, which records no days
    if approved:
        instant, zone = deadline.instant, deadline.zone
    elif asked:
        instant, zone = default_granted_until(request), release.zone
    else:  # no days to count from: the freeze's own deadline, the one that applies
        instant, zone = deadline.original, milestone.zone
    warning = tz.zone_warning(zone)
    zone = _shown_zone(instant, zone)
    original = deadline.original

    label = f"KEP-{kep.number}"
    status = {"approved": "CONFIRMED", "pending": "TENTATIVE"}.get(state, "CANCELLED")
    # A request naming two freezes (PRR + enhancements) is one event, one completion
    # date, under its one UID: its summary and description name both freezes.
    freezes = request.freezes_title
    if superseded:
        granted = f"{freezes} extension for {label} superseded by the freeze"
    elif unrecorded:
        granted = f"{freezes} extension granted for {label}, deadline not recorded"
    else:
        granted = f"{freezes} extended for {label}"
    headline = {
        "approved": granted,
        "pending": f"{freezes} extension requested for {label} (pending)",
        "rejected": f"{freezes} extension for {label} (rejected)",
        "withdrawn": f"{freezes} extension for {label} (withdrawn)",
    }.get(state, f"{freezes} extension for {label} ({state})")
    summary = f"[{release.slug}] {headline}{_summary_suffix(instant, zone)}"

    sig = f" (SIG {kep.owning_sig})" if kep.owning_sig else ""
    lines = [f"{label}: {kep.title}{sig}, exception request #{request.pk}: {state}."]
    days = days_label(request.days)
    if unrecorded:
        lines.append(
            "Extension granted, deadline not recorded (read from sig-release's exceptions.yaml); "
            f"shown at the {milestone.title} deadline: " + _render_deadline(instant, zone)
        )
    elif superseded:
        lines.append(
            f"Superseded by the freeze: the {milestone.title} deadline moved to {_render_deadline(instant, zone)}, "
            f"not earlier than the granted {_render_deadline(deadline.granted, deadline.granted_zone)}; "
            "the freeze's own deadline applies."
        )
    elif state == "approved":
        lines.append("Extended deadline: " + _render_deadline(instant, zone))
        if deadline.hard_stop is not None:
            lines.append("Warning: " + deadline.warning)
    elif state == "pending" and asked:
        lines.append(
            f"Requested: {request.days} more day{'s' if request.days != 1 else ''}; "
            f"if approved as asked the deadline would be {_render_deadline(instant, zone)}."
        )
    elif state == "pending":
        lines.append(f"Requested: {days}; until a decision the {milestone.title} deadline applies to {label}.")
    else:
        word = {"rejected": "was rejected", "withdrawn": "was withdrawn"}.get(state, f"is {state}")
        lines.append(f"This extension request {word}: the {milestone.title} deadline applies to {label}.")
        if asked:
            lines.append(f"It had asked for {days} more, until {_render_deadline(instant, zone)}.")
    if warning:
        lines.append(f"Note: {warning}.")
    aoe = _aoe_line(instant, zone)
    if aoe:
        lines.append(aoe)
    lines.extend(_fold_line(zone, instant))
    original_line = f"Original {milestone.title}: {_render_with_aoe(original, milestone.zone)}"
    lines.append(original_line)
    also = request.also_milestone if request.also_milestone_id else None
    if also is not None:
        lines.append(f"Original {also.title}: {_render_with_aoe(also.deadline, also.zone)}")
    if decision is not None and decision.note:
        lines.append("Decision note: " + decision.note)
    page = f"{site_url}/releases/{release.slug}/exceptions/"
    lines.append("Link: " + page)
    if kep.issue_url:
        lines.append("KEP: " + kep.issue_url)

    stamps = [request.updated_at, milestone.updated_at]
    # A combined request's event shows both freezes: a move of either re-shows it.
    freezes_sequence = milestone.sequence
    if also is not None:
        stamps.append(also.updated_at)
        freezes_sequence += also.sequence
    if decision is not None:
        stamps.append(decision.decided_at)
    return CalendarEvent(
        uid=uid("extension", request.pk, host),
        summary=summary,
        description="\n".join(lines),
        sequence=extension_sequence(
            milestone_sequence=freezes_sequence, revisions=revisions, state=state, corrections=corrections
        ),
        last_modified=_utc(max(stamps)),
        status=status,
        start=tz.to_zone(instant, zone),
        zone=zone,
        url=page,
        categories=("Exception",),
    )


# ----------------------------------------------------------------------- calendar


def _tzid(zone: str) -> str:
    return tz.iana_name(zone)


def _event_tzid(event: CalendarEvent) -> str | None:
    """The TZID an event's DTSTART/DTEND name, None when it has none (all-day, UTC)."""
    if event.is_all_day or _written_in_utc(event) or tz.shown_zone(event.zone) == "UTC":
        return None
    return _tzid(event.zone)


def _vtimezones(tzids: Iterable[str]) -> list[icalendar.Timezone]:
    """One canonical VTIMEZONE per TZID used (feeds/vtimezone.py), in TZID order.

    The definition of a TZID never depends on the feed's events or on today: the same
    bytes in every feed, covering tz.EARLIEST..tz.LATEST (clients cache zones by TZID).
    """
    return [vtimezone(tzid) for tzid in sorted(set(tzids))]


def _written_in_utc(event: CalendarEvent) -> bool:
    """A timed event with an instant in a fold: DTSTART/DTEND in UTC (``...Z``), read
    alike by every client, the zone named in the description (``_fold_line``)."""
    return not event.is_all_day and _in_a_fold(event.zone, event.start, event.end)


def _timed(value: dt.datetime, zone: str) -> dt.datetime:
    if tz.shown_zone(zone) == "UTC":
        return tz.to_utc(value).replace(microsecond=0)
    return tz.to_zone(value, zone).replace(microsecond=0)


# RFC 5545 TEXT allows no control character but HTAB (a line break is written as \n):
# \x0b or \x1b pasted into a note would go raw into the feed.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _text(value: str) -> str:
    return _CONTROL.sub("", value.replace("\r\n", "\n").replace("\r", "\n"))


class _Values:
    """Property values encoded once per feed, shared by the events that have them.

    Most of a feed's values repeat: 300 extensions of one freeze share a handful of
    DTSTARTs, one URL, one CATEGORIES, STATUS, TRANSP, DURATION and SEQUENCE. Each is
    encoded by ``Component.add`` itself, once, on a scratch component, and that encoded
    value (icalendar's own object) is what every event adds: ``add`` keeps an encoded
    value as it is. The bytes are the same; the encoding is not done again per event.
    """

    def __init__(self) -> None:
        self._encoded: dict[tuple, object] = {}

    def __call__(self, name: str, value) -> object:
        # Equal aware datetimes in different zones (or in a fold) are different wall
        # times on the page: the zone and the fold are part of the key.
        plain = tuple(value) if isinstance(value, list) else value
        key = (name, type(value), plain, getattr(value, "tzinfo", None), getattr(value, "fold", 0))
        encoded = self._encoded.get(key)
        if encoded is None:
            scratch = icalendar.Event()
            scratch.add(name, value)
            encoded = self._encoded[key] = scratch[name]
        return encoded


def _valarm(event: CalendarEvent, minutes: int) -> icalendar.Alarm:
    alarm = icalendar.Alarm()
    alarm.add("action", "DISPLAY")
    alarm.add("description", _text(event.summary))
    alarm.add("trigger", -dt.timedelta(minutes=minutes))
    return alarm


def _vevent(event: CalendarEvent, alarms: tuple[int, ...] = (), values: _Values | None = None) -> icalendar.Event:
    """The VEVENT of one event; ``values``: the feed's shared encoded values."""
    shared = values if values is not None else _Values()
    vevent = icalendar.Event()

    def add(name: str, value) -> None:
        vevent.add(name, shared(name, value))

    vevent.add("uid", event.uid)
    add("dtstamp", event.last_modified)
    add("last-modified", event.last_modified)
    add("sequence", event.sequence)
    if event.is_all_day:
        add("dtstart", event.start)
        add("dtend", event.end or event.start + dt.timedelta(days=1))
    else:
        zone = "UTC" if _written_in_utc(event) else event.zone
        add("dtstart", _timed(event.start, zone))
        if event.end is not None:
            add("dtend", _timed(event.end, zone))
        else:
            # A deadline is a point in time: zero length, said explicitly (RFC 5545 forbids
            # DTEND = DTSTART; Exchange refuses an event with neither): docs/feeds.md.
            add("duration", dt.timedelta(0))
    vevent.add("summary", _text(event.summary))
    vevent.add("description", _text(event.description))
    add("status", event.status)
    add("transp", "TRANSPARENT")
    if event.categories:
        add("categories", list(event.categories))
    if event.url:
        add("url", event.url)
    # ?alarm= (off by default): a reminder before each confirmed timed deadline; not for
    # all-day milestones, pending (tentative) extensions or cancelled events.
    if alarms and not event.is_all_day and event.status == "CONFIRMED":
        for minutes in alarms:
            vevent.add_component(_valarm(event, minutes))
    return vevent


def calendar_bytes(
    *, name: str, description: str, events: Iterable[CalendarEvent], alarms: tuple[int, ...] = ()
) -> bytes:
    """Serialise a feed. Events are sorted by start then UID; duplicates (same UID) are
    dropped. ``alarms``: minutes before each confirmed timed deadline (VALARM DISPLAY)."""
    unique: dict[str, CalendarEvent] = {}
    for event in events:
        unique.setdefault(event.uid, event)
    ordered = sorted(unique.values(), key=CalendarEvent.sort_key)
    cal = icalendar.Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    # No METHOD: a published calendar is not an iTIP message (RFC 5545 §3.7.2), and
    # METHOD:PUBLISH without ORGANIZER fails libical's iTIP restrictions.
    # One line each: a release or KEP name with CR/LF (stored by SQL) is not a line break.
    name, description = (_CONTROL.sub("", " ".join(_text(text).split("\n"))) for text in (name, description))
    cal.add("x-wr-calname", name)
    cal.add("name", name)
    cal.add("x-wr-caldesc", description)
    cal.add("refresh-interval", REFRESH, parameters={"VALUE": "DURATION"})
    cal.add("x-published-ttl", icalendar.vText("PT1H"))
    vevents = []
    values = _Values()
    tzids: set[str] = set()  # used by the events kept, each VTIMEZONE made once per feed
    for event in ordered:
        try:
            vevent = _vevent(event, alarms, values)
            tzid = _event_tzid(event)
            if tzid is not None and tzid not in tzids:
                vtimezone(tzid)  # its zone has a VTIMEZONE
                tzids.add(tzid)
        except Exception:  # one event's data, whatever is wrong with it, never takes its feed down
            logger.exception("feed: event %s left out: it cannot be written", event.uid)
            continue
        vevents.append((event, vevent))
    for component in _vtimezones(tzids):
        cal.add_component(component)
    for _, vevent in vevents:
        cal.add_component(vevent)
    missing = cal.get_missing_tzids()
    if missing:  # a TZID without its VTIMEZONE is the bug this writer exists to avoid
        raise RuntimeError(f"VTIMEZONE missing for {sorted(missing)}")
    try:
        return serialised(cal)
    except Exception:  # noqa: BLE001 - icalendar refused an event: find it (logged below), write the rest
        for event, vevent in vevents:
            try:
                vevent.to_ical()
            except Exception:
                logger.exception("feed: event %s left out: icalendar cannot write it", event.uid)
                cal.subcomponents.remove(vevent)
        return serialised(cal)


# A content line is at most 75 octets; a longer one continues after CRLF and a space
# (RFC 5545 §3.1). icalendar folds char by char, never splitting a backslash or caret
# escape from the character after it; the same cut, made here with slices.
FOLD_AT = 74  # octets of a line's text before CRLF (a continuation's space counts apart)


def folded(line: icalendar.parser.Contentline) -> bytes:
    """``line.to_ical()``, the same bytes, without a Python step per character.

    icalendar's fold loops over every character of every line: 37% of the CPU of a
    cold 340-event feed (issue 27). An ASCII line, nearly every line of a feed, is cut
    here in slices exactly where that loop cuts it (tests/feeds/test_ical.py compares
    the two); any other line is folded by icalendar itself.
    """
    if not line.isascii():
        return line.to_ical()
    if len(line) <= FOLD_AT:
        return line.encode("ascii")
    chunks = []
    start = 0
    while len(line) - start > FOLD_AT:
        end = start + FOLD_AT
        if line[end - 1] in "\\^":  # an escape stays with what it escapes
            end -= 1
        chunks.append(line[start:end])
        start = end
    chunks.append(line[start:])
    return "\r\n ".join(chunks).encode("ascii")


def serialised(cal: icalendar.Calendar) -> bytes:
    """``cal.to_ical()``, byte for byte (its content lines, each folded by ``folded``)."""
    return b"\r\n".join(folded(line) for line in cal.content_lines() if line) + b"\r\n"
