"""Validate iCal files with libical (Debian's gir1.2-ical-3.0 through python3-gi).

Run with the system Python (libical is not on PyPI): ``/usr/bin/python3
tests/support/libical_check.py a.ics b.ics ...``. Prints JSON ``{path: [errors]}``: every
X-LIC-ERROR libical adds while parsing, and every one ``icalrestriction_check`` (RFC 5545
/ iTIP property restrictions) adds. Exit status 0 whatever it finds; the test decides.

``--events a.ics b.ics ...`` prints ``{path: {"errors": [...], "events": [...]}}``
instead: each VEVENT's UID and, for a timed one, the UTC instants libical works out for
DTSTART and DTEND (DTEND from DURATION when there is none), each TZID resolved against
the file's own VTIMEZONEs. All-day events have ``"start": null``.
"""

import datetime as dt
import json
import sys

import gi

gi.require_version("ICalGLib", "3.0")
from gi.repository import ICalGLib  # noqa: E402

XLICERROR = ICalGLib.PropertyKind.XLICERROR_PROPERTY
ANY = ICalGLib.ComponentKind.ANY_COMPONENT


def errors(component) -> list[str]:
    found = []
    prop = component.get_first_property(XLICERROR)
    while prop is not None:
        found.append(f"{ICalGLib.Component.kind_to_string(component.isa())}: {prop.get_xlicerror()}")
        prop = component.get_next_property(XLICERROR)
    child = component.get_first_component(ANY)
    while child is not None:
        found += errors(child)
        child = component.get_next_component(ANY)
    return found


def check(path: str) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        component = ICalGLib.Component.new_from_string(handle.read())
    if component is None:
        return ["libical could not parse the file"]
    found = errors(component)  # parse errors
    ICalGLib.restriction_check(component)
    return sorted(set(errors(component)) | set(found))


def _utc(time) -> str | None:
    if time is None or time.is_null_time() or time.is_date():
        return None
    seconds = time.as_timet_with_zone(time.get_timezone())
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def events(path: str) -> dict:
    with open(path, encoding="utf-8") as handle:
        calendar = ICalGLib.Component.new_from_string(handle.read())
    if calendar is None:
        return {"errors": ["libical could not parse the file"], "events": []}
    found = []
    event = calendar.get_first_component(ICalGLib.ComponentKind.VEVENT_COMPONENT)
    while event is not None:
        start = _utc(event.get_dtstart())
        found.append({"uid": event.get_uid(), "start": start, "end": _utc(event.get_dtend()) if start else None})
        event = calendar.get_next_component(ICalGLib.ComponentKind.VEVENT_COMPONENT)
    return {"errors": check(path), "events": found}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--events"]:
        print(json.dumps({path: events(path) for path in sys.argv[2:]}))
    else:
        print(json.dumps({path: check(path) for path in sys.argv[1:]}))
