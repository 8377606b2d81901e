"""SEQUENCE and LAST-MODIFIED follow what a client sees (feeds/published.py).

Hypothesis applies random sequences of edits to every input a feed shows (a release's
zone and exception policy, a milestone's time, title and cancellation, a grant, a KEP's
title, a request's state), through the services and behind their back
(``QuerySet.update``, as an import or psql would), and after each edit compares every
event of the KEP and SIG feeds with the one published before it:

- DTSTART, DTEND, STATUS or SUMMARY changed -> SEQUENCE rose;
- any shown property changed -> LAST-MODIFIED (and DTSTAMP) rose;
- nothing changed -> SEQUENCE and LAST-MODIFIED are the same;
- SEQUENCE never falls.
"""

from __future__ import annotations

import datetime as dt

import icalendar
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exceptions.models import Decision
from exceptions.services import RequestFields, exception_request_approve, exception_request_submit
from feeds import ical
from feeds.published import fingerprints
from releasecal.models import Enhancement, Milestone, Release
from releasecal.services import enhancement_upsert, milestone_cancel, milestone_create, milestone_save, tracking_set

FEEDS = ("/calendar/kep/2400.ics", "/calendar/1.31/sig/node.ics")
TIMING = ("DTSTART", "DTEND", "STATUS", "SUMMARY")
SHOWN = (*TIMING, "DESCRIPTION", "URL", "CATEGORIES")
ZONES = ("America/Los_Angeles", "Europe/Berlin", "Asia/Tokyo", "AoE", "America/Sao_Paulo")


def snapshot() -> dict[str, dict]:
    events = {}
    for path in FEEDS:
        response = Client().get(path)
        assert response.status_code == 200, response.content
        for event in icalendar.Calendar.from_ical(response.content).walk("VEVENT"):
            uid = str(event["UID"])
            shown = {name: event[name].to_ical() if name in event else None for name in SHOWN}
            record = {
                "shown": shown,
                "sequence": int(event["SEQUENCE"]),
                "last_modified": event.decoded("LAST-MODIFIED"),
                "dtstamp": event.decoded("DTSTAMP"),
            }
            assert events.setdefault(uid, record) == record, f"{uid} differs between feeds"
    return events


def move_zone(state, n):
    Release.objects.filter(slug="1.31").update(zone=ZONES[n % len(ZONES)])


def move_policy(state, n):
    Release.objects.filter(slug="1.31").update(request_window_hours={"code-freeze": 24 * (1 + n % 5)})


def move_milestone(state, n):
    milestone = Milestone.objects.get(pk=state["freeze"])
    if milestone.cancelled:
        return
    milestone.at = milestone.at + dt.timedelta(hours=1 + n % 30)
    milestone.ends_at = None
    milestone_save(milestone=milestone)


def rename_milestone(state, n):
    Milestone.objects.filter(pk=state["other"]).update(title=f"Docs freeze v{n}")


def cancel_milestone(state, n):
    milestone = Milestone.objects.get(pk=state["other"])
    if not milestone.cancelled:
        milestone_cancel(milestone=milestone)


def move_grant(state, n):
    decision = Decision.objects.get(request_id=state["granted"])
    Decision.objects.filter(pk=decision.pk).update(granted_until=decision.granted_until + dt.timedelta(hours=n % 50))


def rename_kep(state, n):
    Enhancement.objects.filter(number=2400).update(title=f"Renamed feature {n}")


def rename_release(state, n):
    Release.objects.filter(slug="1.31").update(name=f"Kubernetes v1.31 ({n})")


def approve_pending(state, n):
    from exceptions.models import ExceptionRequest

    request = ExceptionRequest.objects.get(pk=state["pending"])
    if request.state == "pending":
        exception_request_approve(request=request, actor=state["decider"])


def nothing(state, n):
    milestone = Milestone.objects.get(pk=state["freeze"])
    milestone_save(milestone=milestone)  # no field changed


EDITS = [
    move_zone,
    move_policy,
    move_milestone,
    rename_milestone,
    cancel_milestone,
    move_grant,
    rename_kep,
    rename_release,
    approve_pending,
    nothing,
]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.sampled_from(EDITS), st.integers(0, 1000)), min_size=1, max_size=4))
def test_sequence_and_last_modified_follow_every_shown_change(
    edits, release, kinds, kep, pending_request, release_team_member, requester, code_freeze
):
    # Hypothesis reuses the function-scoped fixtures across examples: set up once.
    state = getattr(release, "_sequence_state", None)
    if state is None:
        if pending_request.state == "pending":
            exception_request_approve(request=pending_request, actor=release_team_member)
        other = enhancement_upsert(number=2401, title="Second", owning_sig="node")
        tracking_set(release=release, enhancement=other, stage="alpha")
        enhancements = release.milestones.get(kind__slug="enhancements-freeze")
        pending = exception_request_submit(
            enhancement=kep, milestone=enhancements, requester=requester, fields=RequestFields(days=2),
            submitted_at=enhancements.deadline + dt.timedelta(hours=1),
        )  # fmt: skip
        docs = milestone_create(
            release=release, kind=kinds["docs-freeze"], title="Docs freeze", at=code_freeze.at + dt.timedelta(days=3)
        )
        state = {
            "freeze": code_freeze.pk,
            "other": docs.pk,
            "granted": pending_request.pk,
            "pending": pending.pk,
            "decider": release_team_member,
        }
        release._sequence_state = state
    before = snapshot()
    for edit, n in edits:
        edit(state, n)
        after = snapshot()
        for uid, old in before.items():
            new = after.get(uid)
            if new is None:
                continue
            label = (edit.__name__, n, uid)
            assert new["sequence"] >= old["sequence"], label
            timing_changed = any(old["shown"][name] != new["shown"][name] for name in TIMING)
            shown_changed = old["shown"] != new["shown"]
            if timing_changed:
                assert new["sequence"] > old["sequence"], label
            if shown_changed:
                assert new["last_modified"] > old["last_modified"], label
                assert new["dtstamp"] > old["dtstamp"], label
            else:
                assert (new["sequence"], new["last_modified"]) == (old["sequence"], old["last_modified"]), label
        before = after


def test_a_new_wording_raises_every_sequence(release, code_freeze, monkeypatch):
    before = snapshot_of("/calendar/1.31.ics")
    monkeypatch.setattr(ical, "SEQUENCE_FORMAT", ical.SEQUENCE_FORMAT + 1)
    monkeypatch.setattr(ical, "FORMAT_VERSION", ical.FORMAT_VERSION + "-test")
    after = snapshot_of("/calendar/1.31.ics")
    assert set(before) == set(after)
    for uid in before:
        assert after[uid] == before[uid] + 1, uid


def snapshot_of(path: str) -> dict[str, int]:
    body = Client().get(path).content
    return {str(e["UID"]): int(e["SEQUENCE"]) for e in icalendar.Calendar.from_ical(body).walk("VEVENT")}


def test_fingerprints_separate_timing_from_wording():
    event = ical.CalendarEvent(
        uid="u", summary="s", description="d", sequence=0, last_modified=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
        status="CONFIRMED", start=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
    )  # fmt: skip
    import dataclasses

    timing, shown = fingerprints(event)
    reworded = fingerprints(dataclasses.replace(event, description="other"))
    assert reworded[0] == timing
    assert reworded[1] != shown
    moved = fingerprints(dataclasses.replace(event, start=dt.datetime(2024, 1, 2, tzinfo=dt.UTC)))
    assert moved[0] != timing
