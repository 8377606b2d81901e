"""import_schedule: three formats, free-text times checked against UTC, idempotent upserts."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from releasecal import tz
from releasecal.importers.files import ImportFailed
from releasecal.importers.schedule import milestone_kind_for, schedule_import, schedule_parse
from releasecal.importers.schedule_text import parse_when
from releasecal.models import AuditLog, Milestone, Release
from tests.support.paths import ROOT

UTC = dt.UTC
SHARED_JSON = ROOT / "demo" / "demo_data" / "k8s-schedules.json"
LA = "America/Los_Angeles"


def shared_rows():
    data = json.loads(SHARED_JSON.read_text())
    for slug, rows in data["releases"].items():
        for number, row in enumerate(rows, start=1):
            yield slug, number, row


def write(tmp_path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --------------------------------------------------------------- the shared JSON


@pytest.fixture
def shared_import(db):
    return schedule_import(path=SHARED_JSON)


def test_every_utc_iso_of_the_shared_json_is_the_stored_instant(shared_import):
    checked = 0
    for slug, _number, row in shared_rows():
        milestone = Milestone.objects.get(release__slug=slug, title=row["name"])
        if row["utc_iso"]:
            assert milestone.at == dt.datetime.fromisoformat(row["utc_iso"].replace("Z", "+00:00")), row["name"]
            assert milestone.on_date is None
            checked += 1
        else:
            assert milestone.at is None, row["name"]
            assert milestone.on_date.isoformat() == row["date"], row["name"]
            assert (milestone.ends_on.isoformat() if milestone.ends_on else None) == row.get("date_end"), row["name"]
    assert checked == 14


def test_every_row_whose_notes_say_wrong_or_mismatch_gets_a_warning(shared_import):
    warned = {(w.release, w.row) for w in shared_import.warnings}
    flagged = [(slug, n, row) for slug, n, row in shared_rows() if re.search(r"wrong|mismatch", row["notes"], re.I)]
    assert len(flagged) == 6
    for slug, number, row in flagged:
        assert (slug, number) in warned, f"{slug} {row['name']}: {row['notes']}"


def test_the_time_checks_themselves_catch_every_wrong_row_text(shared_import):
    """Where a note blames the row's own text, the warning comes from the time check
    (not from repeating the note); where it blames the README summary, the quoted
    summary text fails the time check when parsed."""
    by_row: dict[tuple[str, int], list[str]] = {}
    for warning in shared_import.warnings:
        by_row.setdefault((warning.release, warning.row), []).append(warning.message)
    for slug, number, row in shared_rows():
        notes = row["notes"]
        if not re.search(r"wrong|mismatch", notes, re.I):
            continue
        if notes.startswith("CONFLICT"):
            quoted = re.search(r"'([^']*UTC[^']*)'", notes).group(1)
            assert parse_when(quoted, zone=LA).warnings, quoted
        else:
            own = [m for m in by_row[(slug, number)] if not m.startswith("the source")]
            assert own, row["name"]


def test_warnings_go_exactly_to_the_rows_the_notes_flag(shared_import):
    warned = {(w.release, w.row) for w in shared_import.warnings if w.kind != "typo"}
    expected = {
        (slug, n)
        for slug, n, row in shared_rows()
        if re.search(r"wrong|mismatch|CONFLICT|year missing", row["notes"], re.I)
    }
    assert warned == expected
    assert len(shared_import.warnings) == 14


def test_a_wrong_ordinal_is_a_typo_warning_and_the_only_one_the_notes_do_not_flag(shared_import):
    typos = [(w.release, w.title, w.message) for w in shared_import.warnings if w.kind == "typo"]
    assert typos == [("1.30", "Start Release Notes Draft", "ordinal typo: '23th' for the 23rd, read as day 23")]


def test_the_wrong_label_and_weekday_of_1_30_feature_blog_freeze_are_named(shared_import):
    messages = [
        w.message for w in shared_import.warnings if w.release == "1.30" and w.title == "Begin Feature blog freeze"
    ]
    assert "weekday mismatch: 'Wednesday 27th February 2024' is a Tuesday (Tuesday 27 February 2024)" in messages
    assert "weekday mismatch: 'Tuesday 26th February 2024' is a Monday (Monday 26 February 2024)" in messages
    assert any(m.startswith("wrong zone label 'PDT'") and "observes PST" in m for m in messages)


def test_the_local_hour_mismatch_of_1_29_test_freeze_is_named(shared_import):
    messages = [w.message for w in shared_import.warnings if w.release == "1.29" and w.title == "Test Freeze"]
    assert any("local hour mismatch" in m and "17:00 PST Tuesday 14 November 2023" in m for m in messages)
    assert any("18:00 on Tuesday 14 November 2023 in America/Los_Angeles would be 02:00 UTC" in m for m in messages)


def test_the_shared_json_creates_released_releases_with_dates_from_the_rows(shared_import):
    release = Release.objects.get(slug="1.30")
    assert (release.start_date, release.ga_date) == (dt.date(2024, 1, 8), dt.date(2024, 4, 17))
    assert release.zone == LA
    assert shared_import.releases_created == ["1.29", "1.30", "1.33"]
    assert Milestone.objects.get(release=release, title="1.30.0-rc.0 released").kind.slug == "rc"
    assert Milestone.objects.get(release=release, title="v1.30.0 released").kind.slug == "ga"
    kubecon = Milestone.objects.get(release=release, title="KubeCon EU")
    assert (kubecon.kind.slug, kubecon.on_date, kubecon.ends_on) == (
        "event",
        dt.date(2024, 3, 19),
        dt.date(2024, 3, 22),
    )


def test_reimporting_the_same_file_changes_nothing(shared_import):
    sequences = dict(Milestone.objects.values_list("pk", "sequence"))
    audits = AuditLog.objects.count()
    again = schedule_import(path=SHARED_JSON)
    assert (again.created, again.updated, again.unchanged) == (0, 0, shared_import.created)
    assert dict(Milestone.objects.values_list("pk", "sequence")) == sequences
    assert AuditLog.objects.count() == audits


def test_release_option_imports_only_that_release(db):
    result = schedule_import(path=SHARED_JSON, release_slug="1.33")
    assert list(Release.objects.values_list("slug", flat=True)) == ["1.33"]
    assert result.created == 36


def test_dry_run_saves_nothing_and_reports_exactly(db):
    result = schedule_import(path=SHARED_JSON, dry_run=True)
    assert result.created == 114
    assert Milestone.objects.count() == 0
    assert Release.objects.count() == 0


# ------------------------------------------------------------------- our format

OURS = """
release:
  slug: "1.31"
  name: Kubernetes v1.31
  zone: America/Los_Angeles
  start_date: 2024-05-13
  ga_date: 2024-08-13
  status: active
milestones:
  - kind: enhancements-freeze
    title: Enhancements Freeze
    at: "2024-06-13 19:00"
  - kind: code-freeze
    title: Code Freeze
    at: "2024-07-24T02:00Z"
    ends_at: "2024-08-07 19:00"
  - kind: prr-freeze
    title: PRR Freeze
    at: "2024-06-07 00:00"
    zone: AoE
  - kind: ga
    title: v1.31 released
    date: 2024-08-13
  - title: KubeCon NA
    date: 2024-11-12
    ends_on: 2024-11-15
  - title: Docs Freeze
    when: "02:00 UTC Wednesday 31st July 2024 / 19:00 PST Tuesday 30th July 2024"
"""


def test_our_format_reads_wall_times_dates_windows_and_zones(db, tmp_path):
    result = schedule_import(path=write(tmp_path, "s.yaml", OURS))
    assert (result.format, result.created) == ("ours", 6)
    release = Release.objects.get(slug="1.31")
    assert (release.status, release.start_date, release.zone) == ("active", dt.date(2024, 5, 13), LA)
    ef = release.milestones.get(title="Enhancements Freeze")
    assert ef.at == dt.datetime(2024, 6, 14, 2, 0, tzinfo=UTC)
    cf = release.milestones.get(title="Code Freeze")
    assert (cf.at, cf.ends_at) == (dt.datetime(2024, 7, 24, 2, tzinfo=UTC), dt.datetime(2024, 8, 8, 2, tzinfo=UTC))
    prr = release.milestones.get(title="PRR Freeze")
    assert (prr.zone, prr.at) == ("AoE", dt.datetime(2024, 6, 7, 12, tzinfo=UTC))
    kubecon = release.milestones.get(title="KubeCon NA")
    assert (kubecon.kind.slug, kubecon.ends_on) == ("event", dt.date(2024, 11, 15))
    docs = release.milestones.get(title="Docs Freeze")
    assert (docs.kind.slug, docs.at) == ("docs-freeze", dt.datetime(2024, 7, 31, 2, tzinfo=UTC))
    assert [w.title for w in result.warnings] == ["Docs Freeze"]
    assert "wrong zone label 'PST'" in result.warnings[0].message


def test_a_changed_time_updates_the_milestone_in_place_and_bumps_sequence(db, tmp_path):
    schedule_import(path=write(tmp_path, "s.yaml", OURS))
    before = Milestone.objects.get(title="Enhancements Freeze")
    moved = OURS.replace('at: "2024-06-13 19:00"', 'at: "2024-06-14 19:00"')
    result = schedule_import(path=write(tmp_path, "s2.yaml", moved))
    after = Milestone.objects.get(title="Enhancements Freeze")
    assert (result.created, result.updated, result.unchanged) == (0, 1, 5)
    assert after.pk == before.pk
    assert after.sequence == before.sequence + 1
    assert after.at == dt.datetime(2024, 6, 15, 2, tzinfo=UTC)
    assert AuditLog.objects.filter(action="milestone.update", object_id=str(after.pk)).count() == 1


def test_a_wall_time_in_the_spring_forward_gap_is_an_error_naming_the_row_and_both_offsets(db, tmp_path):
    bad = OURS.replace('at: "2024-06-13 19:00"', 'at: "2024-03-10 02:30"')
    with pytest.raises(ImportFailed) as info:
        schedule_import(path=write(tmp_path, "s.yaml", bad))
    message = info.value.message
    assert "milestone 1 'Enhancements Freeze'" in message
    assert "does not exist" in message
    assert "-07:00" in message
    assert "-08:00" in message
    assert Milestone.objects.count() == 0


def test_a_wall_time_in_the_fall_back_fold_is_an_error_unless_it_has_an_offset(db, tmp_path):
    ambiguous = OURS.replace('at: "2024-06-13 19:00"', 'at: "2024-11-03 01:30"')
    with pytest.raises(ImportFailed, match=r"ambiguous.*-07:00.*-08:00"):
        schedule_import(path=write(tmp_path, "s.yaml", ambiguous))
    explicit = OURS.replace('at: "2024-06-13 19:00"', 'at: "2024-11-03 01:30-08:00"')
    schedule_import(path=write(tmp_path, "s2.yaml", explicit))
    assert Milestone.objects.get(title="Enhancements Freeze").at == dt.datetime(2024, 11, 3, 9, 30, tzinfo=UTC)


def test_every_bad_row_is_listed_and_nothing_is_saved(db, tmp_path):
    bad = OURS.replace('at: "2024-06-13 19:00"', 'at: "13 June"').replace("date: 2024-08-13", "date: someday")
    with pytest.raises(ImportFailed) as info:
        schedule_import(path=write(tmp_path, "s.yaml", bad))
    assert len(info.value.errors) == 3  # release.ga_date and the two rows
    assert Release.objects.count() == 0


def test_an_unknown_kind_is_refused_with_the_known_ones(db, tmp_path):
    with pytest.raises(ImportFailed, match=r"Unknown milestone kind\(s\) party; known kinds: .*code-freeze"):
        schedule_import(path=write(tmp_path, "s.yaml", OURS.replace("kind: ga", "kind: party")))


# ----------------------------------------------------------- schedule-builder

SCHEDULE_BUILDER = """
releases:
- version: 1.34
  links:
    - href: https://git.k8s.io/sig-release/releases/release-1.34/README.md
      text: This document
  timeline:
    - what: Start of Release Cycle
      who: Lead
      when: Monday 19th May 2025
      week: week 1
      ciSignal: master-blocking
    - what: "**Begin [Enhancements Freeze]**"
      who: Enhancements Lead
      when: "[21:00 UTC Friday 20th June 2025 / 14:00 PST Friday 20th June 2025](https://everytimezone.com/s/a17d0bdd)"
      week: week 5
    - what: "**Begin [Code Freeze] and [Test Freeze]**"
      who: Branch Manager
      when: 02:00 UTC Friday 25th July 2025 / 19:00 PDT Thursday 24th July 2025
      week: week 10
    - what: v1.34.0-rc.0 released
      who: Branch Manager
      when: Wednesday 6th August 2025
      week: week 12
    - what: "**v1.34.0 released**"
      who: Branch Manager
      when: Wednesday 27th August 2025
      week: week 15
"""


def test_schedule_builder_yaml_is_read_with_markdown_stripped_and_labels_checked(db, tmp_path):
    result = schedule_import(path=write(tmp_path, "rel.yaml", SCHEDULE_BUILDER))
    assert (result.format, result.releases, result.created) == ("schedule-builder", ["1.34"], 5)
    release = Release.objects.get(slug="1.34")  # an unquoted 1.34 stays "1.34"
    assert (release.ga_date, release.status) == (dt.date(2025, 8, 27), "released")
    ef = release.milestones.get(title="Begin Enhancements Freeze")
    assert (ef.kind.slug, ef.at) == ("enhancements-freeze", dt.datetime(2025, 6, 20, 21, tzinfo=UTC))
    assert ef.link == "https://everytimezone.com/s/a17d0bdd"
    assert "Enhancements Lead" in ef.description
    assert release.milestones.get(title="Begin Code Freeze and Test Freeze").kind.slug == "code-freeze"
    assert release.milestones.get(title="v1.34.0 released").kind.slug == "ga"
    assert len(result.warnings) == 1
    assert result.warnings[0].title == "Begin Enhancements Freeze"
    assert "wrong zone label 'PST'" in result.warnings[0].message
    assert "observes PDT" in result.warnings[0].message


def test_schedule_builder_aoe_rows_make_an_aoe_release(db, tmp_path):
    text = """
releases:
- version: "1.35"
  timeline:
    - what: Begin Enhancements Freeze
      who: Enhancements Lead
      when: Thursday 16th October 2025 (AoE) / Friday 17th October 2025, 12:00 UTC
      week: week 5
    - what: v1.35.0 released
      when: Wednesday 17th December 2025
"""
    result = schedule_import(path=write(tmp_path, "rel.yaml", text))
    release = Release.objects.get(slug="1.35")
    ef = release.milestones.get(title="Begin Enhancements Freeze")
    assert (release.zone, ef.zone, ef.at) == ("AoE", "AoE", dt.datetime(2025, 10, 17, 12, tzinfo=UTC))
    assert result.warnings == []


# --------------------------------------------------------- free-text times


@pytest.mark.parametrize(
    ("text", "at", "zone"),
    [
        ("02:00 UTC Friday 14th June 2024 / 19:00 PDT Thursday 13th June 2024", "2024-06-14T02:00Z", LA),
        ("Thursday 9th October 2025 (AoE) / Friday 10th October 2025, 12:00 UTC", "2025-10-10T12:00Z", "AoE"),
        ("Thursday 16th October 2025 (AoE)", "2025-10-17T12:00Z", "AoE"),
        ("19:00 PDT Thursday 13th June 2024", "2024-06-14T02:00Z", LA),
        ("Friday 14th June 2024, 02:00 UTC", "2024-06-14T02:00Z", LA),
        ("18:00 CET Friday 9th February 2024", "2024-02-09T17:00Z", "Europe/Berlin"),
    ],
)
def test_free_text_instants_without_problems_give_no_warning(text, at, zone):
    parsed = parse_when(text, zone=LA, year_hint=dt.date(2024, 1, 1))
    assert tz.isoformat_utc(parsed.at).replace(":00Z", "Z") == at
    assert parsed.zone == zone
    assert parsed.warnings == []


@pytest.mark.parametrize(
    ("text", "on_date", "ends_on"),
    [
        ("Monday 4th September 2023", "2023-09-04", None),
        ("Mon August 23, 2021", "2021-08-23", None),
        ("Tuesday 14th November2023", "2023-11-14", None),
        ("Thursday 01st February 2024", "2024-02-01", None),
        ("Monday 6th - Thursday 9th November 2023", "2023-11-06", "2023-11-09"),
        ("Monday 30th October - Thursday 2nd November 2023", "2023-10-30", "2023-11-02"),
    ],
)
def test_free_text_dates_and_date_ranges(text, on_date, ends_on):
    parsed = parse_when(text, zone=LA)
    assert parsed.at is None
    assert parsed.on_date.isoformat() == on_date
    assert (parsed.ends_on.isoformat() if parsed.ends_on else None) == ends_on
    assert parsed.warnings == []


def test_a_missing_year_is_taken_from_the_neighbouring_rows_and_reported():
    parsed = parse_when("Tuesday 10th October", zone=LA, year_hint=dt.date(2023, 10, 6))
    assert parsed.on_date == dt.date(2023, 10, 10)
    assert parsed.warnings == ["no year in 'Tuesday 10th October'; read as 2023"]


def test_a_wrong_weekday_on_a_date_only_row_is_reported():
    parsed = parse_when("Wednesday 27th February 2024", zone=LA)
    assert parsed.on_date == dt.date(2024, 2, 27)
    assert parsed.warnings == [
        "weekday mismatch: 'Wednesday 27th February 2024' is a Tuesday (Tuesday 27 February 2024)"
    ]


def test_aoe_and_utc_parts_that_disagree_are_reported():
    parsed = parse_when("Thursday 9th October 2025 (AoE) / Friday 10th October 2025, 02:00 UTC", zone="AoE")
    assert parsed.at == dt.datetime(2025, 10, 10, 2, tzinfo=UTC)
    assert len(parsed.warnings) == 1
    assert "local/UTC mismatch: end of day Thursday 9 October 2025" in parsed.warnings[0]


def test_a_utc_part_and_a_local_part_a_day_apart_are_reported():
    parsed = parse_when("02:00 UTC Friday 14th June 2024 / 19:00 PDT Friday 14th June 2024", zone=LA)
    assert parsed.at == dt.datetime(2024, 6, 14, 2, tzinfo=UTC)
    assert any(m.startswith("local date and time mismatch") for m in parsed.warnings)


def test_a_labelled_wall_time_in_the_fold_is_settled_by_its_label():
    assert parse_when("01:30 PST Sunday 3rd November 2024", zone=LA).at == dt.datetime(2024, 11, 3, 9, 30, tzinfo=UTC)
    assert parse_when("01:30 PDT Sunday 3rd November 2024", zone=LA).at == dt.datetime(2024, 11, 3, 8, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("soon", "Could not find a date"),
        ("31st February 2024", "not a real date"),
        ("18:00 ICT Friday 14th June 2024", "Unknown time zone label 'ICT'"),  # HKT is in tz.ZONE_LABELS
        ("02:30 Sunday 10th March 2024", "does not exist in America/Los_Angeles"),
        ("01:30 Sunday 3rd November 2024", "is ambiguous in America/Los_Angeles"),
    ],
)
def test_unreadable_free_text_is_an_error(text, error):
    with pytest.raises(Exception, match=re.escape(error)):
        parse_when(text, zone=LA)


@pytest.mark.parametrize(
    ("title", "kind"),
    [
        ("Production Readiness Freeze", "prr-freeze"),
        ("**Begin [Production Readiness Freeze]**", "prr-freeze"),
        ("Begin Enhancements Freeze", "enhancements-freeze"),
        ("Begin Feature blog freeze", "feature-blog-freeze"),
        ("Begin Code Freeze and Test Freeze", "code-freeze"),
        ("Test Freeze", "test-freeze"),
        ("Docs Freeze", "docs-freeze"),
        ("1.31.0-alpha.1 released", "alpha"),
        ("v1.34.0-beta.0 released", "beta"),
        ("1.31.0-rc.0 released", "rc"),
        ("v1.31 released", "ga"),
        ("v1.29.0 released", "ga"),
        ("Start of Release Cycle", "release-start"),
        ("KubeCon NA", "event"),
        ("Call for Exceptions", "other"),
        ("Call for PRR and Enhancement Freeze Exceptions", "other"),
        ("Brace Yourself, Code Freeze is Coming", "other"),
        ("Thaw", "other"),
        ('"Feature Freeze" begins', "enhancements-freeze"),
        ("Begin code and test freeze", "code-freeze"),
        ("End of code freeze: Master branch re-opens for 1.12", "other"),
        ("Notify kubernetes-dev of lifting code freeze", "other"),
        ("1st stability evaluation to shorten Code Freeze", "other"),
        ("v1.10.0", "ga"),
    ],
)
def test_row_names_map_to_kinds(title, kind):
    assert milestone_kind_for(title) == kind


# ------------------------------------------------------- the command's edges


def test_the_command_prints_warnings_and_a_summary(db, capsys):
    call_command("import_schedule", str(SHARED_JSON), "--release", "1.30")
    out, err = capsys.readouterr()
    assert "k8s-json schedule for 1.30 (created release 1.30): 39 created, 0 updated, 0 unchanged, 7 warnings." in out
    assert err.count("WARNING: 1.30 row") == 7
    call_command("import_schedule", str(SHARED_JSON), "--release", "1.30")
    out, _ = capsys.readouterr()
    assert "0 created, 0 updated, 39 unchanged" in out


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (None, "no such file"),
        ("release: [unclosed", "not valid YAML (line 1"),
        ('{"releases": ', "not valid JSON"),
        ("hello: world\n", "Unknown schedule format (found: hello)"),
        (
            "releases:\n- version: '1.31'\n  timeline:\n  - what: Code Freeze\n    when: 31st June 2024\n",
            "row 1 'Code Freeze'",
        ),
    ],
)
def test_bad_input_is_a_clear_command_error(db, tmp_path, content, error):
    path = tmp_path / "schedule.yaml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CommandError, match=re.escape(error)):
        call_command("import_schedule", str(path))


def test_an_unknown_release_or_zone_option_is_a_clear_error(db):
    with pytest.raises(CommandError, match=r"Release '1.99' is not in the file; it has: 1.29, 1.30, 1.33"):
        call_command("import_schedule", str(SHARED_JSON), "--release", "1.99")
    with pytest.raises(CommandError, match=r"--zone: Unknown time zone 'Mars/Base'"):
        call_command("import_schedule", str(SHARED_JSON), "--zone", "Mars/Base")


def test_schedule_parse_is_pure_and_needs_no_database():
    parsed = schedule_parse(SHARED_JSON.read_text(), release_slug="1.29")
    assert parsed.format == "k8s-json"
    assert len(parsed.releases[0].milestones) == 39


README_TABLE = """# Kubernetes v1.31

## Timeline

| **What** | **Who** | **When** | **WEEK** | **CI SIGNAL** |
|---|---|---|---|---|
| Start of Release Cycle | Lead | Monday 13th May 2024 | week 1 | [master-blocking] |
| **Begin [Enhancements Freeze]** | EL | 02:00 UTC Friday 14th June 2024 / 19:00 PDT Thursday 13th June 2024 | 5 |
| **Call for [Exceptions][Exception]** | Lead | Monday 1st July 2024 | week 8 | |
| **[Test Freeze]** | BM | 01:00 UTC Wednesday 31st July 2024 / 19:00 PDT Tuesday 30th July 2024 | week 12 | |
| Feature blog publication starts | Comms | TBD | | |
| 1.31.0-rc.0 released | Branch Manager | Tuesday 30th July 2024 | week 12 | |
| **v1.31.0 released** | Branch Manager | Tuesday 13th August 2024 | week 14 | |

## Phases
"""


def test_a_sig_release_readme_timeline_table_is_read_too(db, tmp_path):
    result = schedule_import(path=write(tmp_path, "README.md", README_TABLE))
    assert (result.format, result.releases, result.created) == ("k8s-readme", ["1.31"], 6)
    release = Release.objects.get(slug="1.31")
    assert release.milestones.get(title="Begin Enhancements Freeze").at == dt.datetime(2024, 6, 14, 2, tzinfo=UTC)
    assert release.milestones.get(title="Call for Exceptions").kind.slug == "other"
    messages = {w.title: w.message for w in result.warnings}
    assert messages["Test Freeze"].startswith("local hour mismatch: '19:00 PDT Tuesday 30th July 2024'")
    assert (
        messages["Feature blog publication starts"] == "'TBD' is not a date yet: kept as undated, not on the calendar"
    )


def test_control_characters_are_normalised_and_non_http_links_left_out_with_a_warning(db, tmp_path):
    """Issue 29, items 11 and 15: a title with CR/LF made the release's feeds fail; a
    ``javascript:`` link went into pages (``<a href="javascript:…">``) and feeds."""
    text = OURS.replace(
        "    title: Enhancements Freeze\n",
        '    title: "Enhancements\\r\\nFreeze\\u0007"\n    link: "javascript:alert(1)"\n',
    )
    text = text.replace("    title: PRR Freeze\n", "    title: PRR Freeze\n    link: https://example.com/prr\n")
    text = text.replace("  - title: KubeCon NA\n", '  - title: KubeCon NA\n    link: "data:text/html,<b>x</b>"\n')
    result = schedule_import(path=write(tmp_path, "s.yaml", text))
    release = Release.objects.get(slug="1.31")
    ef = release.milestones.get(title="Enhancements Freeze")
    assert ef.link == ""
    assert release.milestones.get(title="PRR Freeze").link == "https://example.com/prr"
    assert release.milestones.get(title="KubeCon NA").link == ""
    assert sorted(str(w) for w in result.warnings if "Docs Freeze" not in w.title) == [
        "1.31 row 1 'Enhancements Freeze': control characters in the title removed",
        "1.31 row 1 'Enhancements Freeze': link 'javascript:alert(1)' is not http(s): left out",
        "1.31 row 5 'KubeCon NA': link 'data:text/html,<b>x</b>' is not http(s): left out",
    ]
    from django.test import Client

    assert Client().get("/calendar/1.31.ics").status_code == 200
