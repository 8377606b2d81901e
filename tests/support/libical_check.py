"""Validate iCal files with libical (Debian's gir1.2-ical-3.0 through python3-gi).

Run with the system Python (libical is not on PyPI): ``/usr/bin/python3
tests/support/libical_check.py a.ics b.ics ...``. Prints JSON ``{path: [errors]}``: every
X-LIC-ERROR libical adds while parsing, and every one ``icalrestriction_check`` (RFC 5545
/ iTIP property restrictions) adds. Exit status 0 whatever it finds; the test decides.
"""

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


if __name__ == "__main__":
    print(json.dumps({path: check(path) for path in sys.argv[1:]}))
