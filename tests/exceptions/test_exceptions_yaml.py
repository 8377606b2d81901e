"""sig-release's exceptions.yaml both ways, over every real file in ../shared/data/k8s-exceptions/."""

from __future__ import annotations

import datetime as dt
import io
import os
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from exceptions.models import Decision, ExceptionRequest, days_label
from exceptions.selectors import kep_effective_deadline
from exceptions.services import RequestFields, exception_request_submit, exception_request_withdraw
from exceptions.yaml_format import RecordFileError, read_record_file
from exceptions.yaml_sync import exceptions_yaml_export, exceptions_yaml_import
from releasecal import tz
from releasecal.models import Release, Tracking
from releasecal.services import enhancement_upsert, milestone_create
from tests.support.paths import SHARED_DATA

SHARED = SHARED_DATA / "k8s-exceptions"
REAL_FILES = sorted(SHARED.glob("release-*.yaml")) if SHARED.is_dir() else []

if not REAL_FILES:  # the data lives beside the repository, never copied into it
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"The real exceptions.yaml files are missing: {SHARED}")
    pytest.skip(f"no real exceptions.yaml files at {SHARED}", allow_module_level=True)


def _version(path: Path) -> str:
    return path.stem.removeprefix("release-")


def _release(kinds, slug: str, zone: str = "America/Los_Angeles") -> Release:
    release = Release.objects.create(
        slug=slug, name=f"Kubernetes v{slug}", zone=zone, start_date=dt.date(2018, 1, 1), ga_date=dt.date(2030, 1, 1)
    )
    for kind, day in (("enhancements-freeze", 1), ("code-freeze", 2), ("docs-freeze", 3)):
        milestone_create(
            release=release, kind=kinds[kind], title=kinds[kind].name, at=tz.end_of_day(dt.date(2018, 1, day), zone)
        )
    return release


# ------------------------------------------------------------------ reading


def test_every_real_file_is_read_with_the_counts_the_data_readme_gives():
    entries = [e for path in REAL_FILES for e in read_record_file(path.read_text("utf-8")).entries if not e.is_blank]
    assert len(entries) == 207
    assert Counter(e.kind for e in entries) == {"code-freeze": 124, "enhancements-freeze": 82, "docs-freeze": 1}
    words = Counter(e.status_word.lower() for e in entries)
    assert words == {"approved": 167, "denied": 27, "rejected": 11, "reverted": 1, "removed": 1}
    assert all(e.outcome in ("approved", "rejected") for e in entries)


def test_the_three_invalid_files_are_read_line_by_line():
    lenient = {_version(p) for p in REAL_FILES if read_record_file(p.read_text("utf-8")).lenient}
    assert lenient == {"1.14", "1.20", "1.23"}


def test_flat_lists_take_the_freeze_from_the_comment_above():
    record = read_record_file((SHARED / "release-1.21.yaml").read_text("utf-8"))
    by_name = {e.name: e.kind for e in record.entries}
    assert by_name["Support for Windows privileged containers"] == "enhancements-freeze"
    assert by_name["Metrics Stability Enhancement"] == "code-freeze"
    assert Counter(by_name.values()) == {"code-freeze": 10, "enhancements-freeze": 2}
    # 1.10 says it only in the first line: "Exceptions to code freeze requested in 1.10".
    assert {e.kind for e in read_record_file((SHARED / "release-1.10.yaml").read_text("utf-8")).entries} == {
        "code-freeze"
    }


def test_fields_in_their_odd_spellings():
    e120 = {e.name: e for e in read_record_file((SHARED / "release-1.20.yaml").read_text("utf-8")).entries}
    swap = e120["Add Scope feature to Topology Manager"]
    assert swap.date_requested == dt.date(2020, 11, 2)  # written 2020-11-2
    distroless = e120["Use distroless/static for Kubernetes Core Images"]
    assert distroless.pull_requests == [  # a comma after the first quoted item
        "https://github.com/kubernetes/kubernetes/issues/70249",
        "https://github.com/kubernetes/kubernetes/issues/90698",
    ]
    e119 = {e.name: e for e in read_record_file((SHARED / "release-1.19.yaml").read_text("utf-8")).entries}
    assert e119["Speed up recursive SELinux label change"].pull_requests == [
        "https://github.com/kubernetes/enhancements/pull/1621"
    ]  # pull-requests with a hyphen
    e110 = read_record_file((SHARED / "release-1.10.yaml").read_text("utf-8")).entries
    assert [e.kep_number for e in e110] == [None, None, None, 213, 22]  # k/k URLs name no KEP; features/ does
    e114 = read_record_file((SHARED / "release-1.14.yaml").read_text("utf-8")).entries
    assert e114[0].is_blank
    assert e114[-1].name == "CSI raw block volumes to beta"
    assert e114[-1].kep_number == 565


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("title: Node swap\nnumber: 2400\nstage: beta\n", "not an exceptions.yaml file"),
        ("a\x00b", "NUL"),
        ("42\n", "neither a list"),
        ("- just a string\n", "not a mapping"),
    ],
)
def test_what_is_not_such_a_file_is_refused_in_one_sentence(text, message):
    with pytest.raises(RecordFileError, match=message):
        read_record_file(text)


# ------------------------------------------------------------------ import and export over every real file


@pytest.mark.parametrize("path", REAL_FILES, ids=_version)
def test_real_file_imports_idempotently_and_round_trips_byte_for_byte(kinds, path):
    text = path.read_text("utf-8")
    release = _release(kinds, _version(path))
    first = exceptions_yaml_import(release=release, text=text, file_name=path.name)
    record = read_record_file(text)
    importable = [e for e in record.entries if not e.is_blank and e.kep_number is not None]
    assert len(first.created) + sum("already has a" in s for s in first.skipped) == len(importable)
    requests = ExceptionRequest.objects.filter(release=release)
    assert requests.count() == len(first.created)
    for request in requests.select_related("decision"):
        assert request.decision.granted_until is None  # never invented
        assert request.decision.deadline_recorded == (request.state == "rejected")
        assert request.days is None
    again = exceptions_yaml_import(release=release, text=text, file_name=path.name)
    assert (again.created, again.decided) == ([], [])
    assert requests.count() == len(first.created)
    assert exceptions_yaml_export(release=release) == text


def test_statuses_dates_and_threads_land_on_requests_and_decisions(kinds):
    release = _release(kinds, "1.21")
    exceptions_yaml_import(release=release, text=(SHARED / "release-1.21.yaml").read_text("utf-8"))
    states = Counter(ExceptionRequest.objects.filter(release=release).values_list("state", flat=True))
    assert states == {"rejected": 7, "approved": 5}
    # Two denied code-freeze requests for KEP-1981, requested on different days: both kept.
    kep1981 = ExceptionRequest.objects.filter(
        release=release, enhancement__number=1981, milestone__kind__slug="code-freeze"
    )
    assert sorted(tz.local_date(r.submitted_at, release.zone) for r in kep1981) == [
        dt.date(2021, 3, 12),
        dt.date(2021, 3, 16),
    ]
    probes = ExceptionRequest.objects.get(release=release, enhancement__number=2238)
    assert probes.state == "approved"
    assert tz.local_date(probes.submitted_at, release.zone) == dt.date(2021, 3, 10)
    assert tz.local_date(probes.decision.decided_at, release.zone) == dt.date(2021, 3, 11)
    assert probes.decision.decided_by is None
    assert "records no granted deadline" in probes.decision.note
    assert probes.thread_url == "https://groups.google.com/g/kubernetes-sig-release/c/eOphdiRmK7k/m/ky4_ryScAgAJ"
    assert probes.current.pr_urls == ["https://github.com/kubernetes/kubernetes/pull/99375"]
    assert probes.current.enhancement_name == "Add configurable grace period to probes"
    assert (
        Tracking.objects.get(release=release, enhancement=probes.enhancement).status
        == Tracking.Status.EXCEPTION_APPROVED
    )


def test_reverted_is_an_approval_whose_work_left_the_release(kinds):
    release = _release(kinds, "1.10")
    report = exceptions_yaml_import(release=release, text=(SHARED / "release-1.10.yaml").read_text("utf-8"))
    assert len(report.created) == 2  # features/213 and features/22
    assert len(report.skipped) == 3
    assert all("names no KEP" in s for s in report.skipped)
    removed = read_record_file((SHARED / "release-1.32.yaml").read_text("utf-8")).entries[1]
    assert removed.status_word == "removed"
    assert removed.removed_after_approval


def test_an_unrecorded_grant_keeps_the_milestone_deadline_and_says_so(kinds):
    release = _release(kinds, "1.36", zone="AoE")
    exceptions_yaml_import(release=release, text=(SHARED / "release-1.36.yaml").read_text("utf-8"))
    request = ExceptionRequest.objects.get(release=release, enhancement__number=4563)
    deadline = kep_effective_deadline(enhancement=request.enhancement, milestone=request.milestone)
    assert deadline.is_extension
    assert not deadline.grant_recorded
    assert deadline.instant == request.milestone.deadline
    assert "granted, deadline not recorded" in deadline.display()
    assert days_label(request.days) == "days not recorded"


# ------------------------------------------------------------------ export edits the file as a person would


def test_export_rewrites_only_what_changed_and_adds_our_requests_in_their_freeze(release, code_freeze):
    original = (SHARED / "release-1.31.yaml").read_text("utf-8")
    exceptions_yaml_import(release=release, text=original)
    # The release team reverses a decision here: the export must show exactly that line.
    rejected = ExceptionRequest.objects.get(release=release, enhancement__number=3973)
    Decision.objects.filter(request=rejected).update(outcome="approved")
    ExceptionRequest.objects.filter(pk=rejected.pk).update(state="approved")
    filed_at = code_freeze.deadline + dt.timedelta(hours=1)
    pending = exception_request_submit(
        enhancement=enhancement_upsert(number=5000, title="Pending KEP", owning_sig="node"),
        milestone=code_freeze,
        fields=RequestFields(days=3, enhancement_name="A pending request", pr_urls=["https://github.com/k/k/pull/1"]),
        submitted_at=filed_at,
    )
    withdrawn = exception_request_submit(
        enhancement=enhancement_upsert(number=5001, title="Withdrawn KEP", owning_sig="node"),
        milestone=code_freeze,
        fields=RequestFields(days=2, enhancement_name="A withdrawn request"),
        submitted_at=filed_at,
    )
    exception_request_withdraw(request=withdrawn, actor=None)
    exported = exceptions_yaml_export(release=release)
    old_lines, new_lines = original.splitlines(), exported.splitlines()
    changed = [(a, b) for a, b in zip(old_lines, new_lines, strict=False) if a != b]
    assert changed[0] == ('  status: "rejected"', '  status: "approved"')
    assert new_lines[: len(old_lines)] != old_lines
    tail = "\n".join(new_lines[len(old_lines) :])
    assert f"# releasecal request #{pending.pk}: pending, not decided yet" in tail
    assert f"# releasecal request #{withdrawn.pk}: withdrawn by the requester, not decided" in tail
    assert '  status: "pending"' in tail
    assert '  status: "withdrawn"' in tail
    assert '    - "https://github.com/k/k/pull/1"' in tail  # the file's own list indentation
    back = read_record_file(exported)
    assert not back.lenient
    assert [(e.kep_number, e.outcome) for e in back.entries[-2:]] == [(5000, "pending"), (5001, "withdrawn")]
    assert all(e.kind == "code-freeze" for e in back.entries[-2:])
    # Importing our own export again changes nothing.
    report = exceptions_yaml_import(release=release, text=exported)
    assert (report.created, report.decided) == ([], [])


def test_a_release_without_an_imported_file_gets_the_current_shape(kinds, pending_request, release):
    exported = exceptions_yaml_export(release=release)
    assert exported.startswith("# Exception requests in v1.31\n")
    assert "\nenhancementFreeze:\n" in exported
    assert "\ncodeFreeze:\n" in exported
    entries = read_record_file(exported).entries
    assert [(e.kep_number, e.kind, e.outcome) for e in entries] == [(2400, "code-freeze", "pending")]


def test_a_pending_request_decided_in_the_file_is_decided_here(kinds, pending_request, release):
    text = (
        "codeFreeze:\n"
        '- name: "Node memory swap support"\n'
        "  issue: 2400\n"
        f"  date_requested: {tz.local_date(pending_request.submitted_at, release.zone)}\n"
        "  date_reviewed: 2024-07-25\n"
        '  status: "Approved"\n'
    )
    report = exceptions_yaml_import(release=release, text=text)
    assert report.decided == [f"#{pending_request.pk} KEP-2400: Approved"]
    pending_request.refresh_from_db()
    assert pending_request.state == "approved"
    assert pending_request.decision.granted_until is None


# ------------------------------------------------------------------ the commands


def test_import_command_reports_and_refuses_bad_input(kinds, tmp_path, release_team_member):
    _release(kinds, "1.25")
    out = io.StringIO()
    call_command(
        "import_exceptions_yaml", str(SHARED / "release-1.25.yaml"), "--release", "1.25", "--user", "lead", stdout=out
    )
    imported = ExceptionRequest.objects.filter(release__slug="1.25")
    assert {r.entered_by for r in imported} == {release_team_member}  # who ran it entered them
    assert {r.requester for r in imported} == {None}  # the file does not say who asked
    assert (
        out.getvalue().splitlines()[0] == "release-1.25.yaml into 1.25: 13 created, 0 decided, 0 unchanged, 0 skipped."
    )
    binary = tmp_path / "x.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    for args, message in [
        ([str(binary), "--release", "1.25"], "not UTF-8 text"),
        ([str(tmp_path / "missing.yaml"), "--release", "1.25"], "No such file"),
        ([str(SHARED / "release-1.25.yaml"), "--release", "9.99"], "No release '9.99'"),
        ([str(SHARED / "README.md"), "--release", "1.25"], "README.md:"),
    ]:
        with pytest.raises(CommandError, match=message):
            call_command("import_exceptions_yaml", *args, stdout=io.StringIO())


def test_export_command_writes_the_file(kinds):
    release = _release(kinds, "1.33")
    exceptions_yaml_import(release=release, text=(SHARED / "release-1.33.yaml").read_text("utf-8"))
    out = io.StringIO()
    call_command("export_exceptions_yaml", "--release", "1.33", stdout=out)
    assert out.getvalue() == (SHARED / "release-1.33.yaml").read_text("utf-8")


def test_an_unrecorded_grant_is_served_by_the_feed_and_the_api(client, kinds):
    release = _release(kinds, "1.36", zone="AoE")
    exceptions_yaml_import(release=release, text=(SHARED / "release-1.36.yaml").read_text("utf-8"))
    request = ExceptionRequest.objects.get(release=release, enhancement__number=4563)
    feed = client.get("/calendar/kep/4563.ics")
    assert feed.status_code == 200
    body = feed.content.decode().replace("\r\n ", "")
    assert "Extension granted\\, deadline not recorded" in body
    detail = client.get(f"/api/v1/exceptions/{request.pk}/").json()
    assert detail["decision"]["granted_until"] is None
    # The enhancements freeze's own deadline: end of Monday 1 January 2018 AoE.
    assert detail["effective_deadline"] == "2018-01-02T12:00:00Z"
    assert detail["effective_deadline_local"]["display"] == (
        "end of Monday 1 January 2018 AoE (12:00 UTC Tuesday 2 January 2018)"
    )
    assert detail["days"] is None


def test_the_api_serves_the_file(client, kinds):
    release = _release(kinds, "1.34")
    text = (SHARED / "release-1.34.yaml").read_text("utf-8")
    exceptions_yaml_import(release=release, text=text)
    response = client.get("/api/v1/releases/1.34/exceptions.yaml")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/yaml; charset=utf-8"
    assert response.content.decode("utf-8") == text
    missing = client.get("/api/v1/releases/9.99/exceptions.yaml")
    assert missing.status_code == 404
    assert missing.json()["message"] == "No release '9.99'."


def test_the_exceptions_page_says_the_grant_was_not_recorded(client, kinds):
    release = _release(kinds, "1.36", zone="AoE")
    Release.objects.filter(pk=release.pk).update(status=Release.Status.ACTIVE)
    exceptions_yaml_import(release=release, text=(SHARED / "release-1.36.yaml").read_text("utf-8"))
    page = client.get("/releases/1.36/exceptions/").content.decode()
    assert page.count("granted, deadline not recorded") == 2  # KEP-4563 and KEP-5823
    assert "days not recorded" in page


def test_variations_a_future_file_may_bring():
    text = (
        "# Exception requests in v1.40\n"
        "enhancementFreeze:\n"
        "- name: Hash issue\n  issue: '#4321'\n  date_requested: 2027/02/01\n  status: Approved (late)\n"
        "- name: KEP prefix\n  issue: KEP-4322\n  date_requested: 1 February 2027\n  status: denied.\n"
        "- name: Not approved\n  issue: 4323\n  date_requested: February 2nd, 2027\n  status: not approved\n"
        "testFreeze:\n"
        "- name: Unknown section, known words\n  issue: 4324\n  status: approved\n"
        "featureBlogFreeze:\n"
        "- name: Unknown section, no exception kind\n  issue: 4325\n  status: approved\n"
    )
    entries = {e.name: e for e in read_record_file(text).entries}
    assert (entries["Hash issue"].kep_number, entries["Hash issue"].outcome) == (4321, "approved")
    assert entries["Hash issue"].date_requested == dt.date(2027, 2, 1)
    assert (entries["KEP prefix"].kep_number, entries["KEP prefix"].outcome) == (4322, "rejected")
    assert entries["KEP prefix"].date_requested == dt.date(2027, 2, 1)
    assert entries["Not approved"].outcome == ""  # unknown words are never guessed
    assert entries["Not approved"].date_requested == dt.date(2027, 2, 2)
    assert entries["Unknown section, known words"].kind == "test-freeze"
    assert entries["Unknown section, no exception kind"].kind == ""
