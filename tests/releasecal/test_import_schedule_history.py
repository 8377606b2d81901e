"""Every Kubernetes schedule ever published (the README of 1.10 to 1.37) imports exactly.

The READMEs are read where the shared data lives (``../shared/data/k8s-readmes/`` from the
repository root), never copied in. The expected instants below were worked out by hand
from the README text (the UTC half of a UTC/Pacific pair is authoritative, "EOD <zone>"
is the end of that day in the zone's region: docs/schedule-format.md).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from releasecal.importers.files import ImportFailed
from releasecal.importers.schedule import schedule_import, schedule_parse, schedule_parse_many
from releasecal.models import Milestone, Release

UTC = dt.UTC
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "manage.py").exists())
READMES = ROOT.parent / "shared" / "data" / "k8s-readmes"
TODAY = dt.date(2026, 11, 30)  # the reading day: placing years must not depend on the clock

if not READMES.is_dir():
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"{READMES} is missing: the shared data must be beside the repository in CI")
    pytest.skip(f"{READMES} is missing (the shared data folder)", allow_module_level=True)


def readme(version: str) -> Path:
    return READMES / f"release-{version}.md"


def all_readmes() -> list[Path]:
    return sorted(READMES.glob("release-1.*.md"), key=lambda p: int(p.stem.split(".")[1]))


@pytest.fixture(scope="module")
def history():
    """All 28 READMEs read together (pure, no database): {slug: (ReleaseSpec, warnings)}."""
    sources = [(str(p), p.read_text()) for p in all_readmes()]
    parsed = schedule_parse_many(sources, today=TODAY)
    return {
        spec.slug: (spec, [w for w in schedule.warnings if w.release == spec.slug])
        for _source, schedule in parsed
        for spec in schedule.releases
    }


def milestone(history, slug: str, title: str):
    matches = [m for m in history[slug][0].milestones if m.title == title]
    assert len(matches) == 1, (slug, title, [m.title for m in history[slug][0].milestones])
    return matches[0]


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


# Rows of each timeline table, less the rows without a date (TBD/TBC) and the one line
# of 1.11 that is the rest of the row above split over two lines.
MILESTONES = {
    "1.10": 34, "1.11": 38, "1.12": 36, "1.13": 41, "1.14": 28, "1.15": 24, "1.16": 29,
    "1.17": 31, "1.18": 28, "1.19": 32, "1.20": 29, "1.21": 31, "1.22": 33, "1.23": 36,
    "1.24": 39, "1.25": 37, "1.26": 40, "1.27": 37, "1.28": 37, "1.29": 39, "1.30": 39,
    "1.31": 37, "1.32": 37, "1.33": 36, "1.34": 36, "1.35": 38, "1.36": 37, "1.37": 38,
}  # fmt: skip
# Start of the release cycle and release day, as each README's table says.
CYCLES = {
    "1.10": ("2018-01-02", "2018-03-26"), "1.11": ("2018-04-02", "2018-06-26"),
    "1.12": ("2018-07-02", "2018-09-27"), "1.13": ("2018-10-01", "2018-12-03"),
    "1.14": ("2019-01-07", "2019-03-25"), "1.15": ("2019-04-08", "2019-06-17"),
    "1.16": ("2019-07-01", "2019-09-18"), "1.17": ("2019-09-23", "2019-12-09"),
    "1.18": ("2020-01-06", "2020-03-24"), "1.19": ("2020-04-13", "2020-08-26"),
    "1.20": ("2020-09-14", "2020-12-08"), "1.21": ("2021-01-11", "2021-04-08"),
    "1.22": ("2021-04-26", "2021-08-04"), "1.23": ("2021-08-23", "2021-12-07"),
    "1.24": ("2022-01-10", "2022-05-03"), "1.25": ("2022-05-23", "2022-08-23"),
    "1.26": ("2022-09-05", "2022-12-09"), "1.27": ("2023-01-09", "2023-04-11"),
    "1.28": ("2023-05-15", "2023-08-15"), "1.29": ("2023-09-04", "2023-12-13"),
    "1.30": ("2024-01-08", "2024-04-17"), "1.31": ("2024-05-13", "2024-08-13"),
    "1.32": ("2024-09-09", "2024-12-11"), "1.33": ("2025-01-13", "2025-04-23"),
    "1.34": ("2025-05-19", "2025-08-27"), "1.35": ("2025-09-15", "2025-12-17"),
    "1.36": ("2026-01-12", "2026-04-22"), "1.37": ("2026-05-18", "2026-08-26"),
}  # fmt: skip


def test_all_28_readmes_are_read(history):
    assert sorted(history, key=lambda s: int(s.split(".")[1])) == list(MILESTONES)


@pytest.mark.parametrize("slug", list(MILESTONES))
def test_each_release_has_its_milestones_and_its_cycle(history, slug):
    spec, _warnings = history[slug]
    assert len(spec.milestones) == MILESTONES[slug]
    start, ga = (dt.date.fromisoformat(d) for d in CYCLES[slug])
    assert (spec.start_date, spec.ga_date) == (start, ga)
    for m in spec.milestones:
        first = m.on_date or m.at.date()
        last = m.ends_on or first
        # Team set-up a few days before the start, the retrospective and the next
        # cycle's start weeks after release day: never another year's cycle.
        assert start - dt.timedelta(days=14) <= first <= last <= ga + dt.timedelta(days=45), (slug, m.title, first)


# One or more hand-checked instants for every table shape.
INSTANTS = [
    # month columns, "EOD PST" in the name, winter: end of 22 January 2018 in Los Angeles
    ("1.10", '"Feature Freeze" begins', "2018-01-23T08:00Z"),
    # "EOD PST" written in summer: the end of the day in Los Angeles, then on PDT
    ("1.11", "Begin code freeze", "2018-06-06T07:00Z"),
    ("1.12", "Begin code and test freeze", "2018-09-05T07:00Z"),
    # month columns with weekday cells ("Thu 7" under Mar); 7 March 2019 is still PST
    ("1.14", "Begin Code Freeze", "2019-03-08T08:00Z"),
    # "Tue 30" under Jul, EOD PST in July
    ("1.16", "Begin Enhancements Freeze", "2019-07-31T07:00Z"),
    # When column without a year: Thu March 5 2020, EOD PST (DST starts 8 March)
    ("1.18", "Begin Code Freeze", "2020-03-06T08:00Z"),
    # a README with no year anywhere, placed between 1.18 and 1.20
    ("1.19", "Begin Code Freeze", "2020-07-10T07:00Z"),
    # times in the name: "(23:59 PDT)", "(18:00 PDT)", "10:00am PDT"
    ("1.22", "Begin Enhancements Freeze", "2021-05-14T06:59Z"),
    ("1.22", "Begin Code Freeze", "2021-07-09T01:00Z"),
    ("1.22", "Release retrospective", "2021-08-19T17:00Z"),
    # "(18:00 PST)" after the clocks went back on 7 November 2021; "(10:00am PDT)" before
    ("1.23", "Begin Code Freeze", "2021-11-17T02:00Z"),
    ("1.23", "Release retrospective part 1", "2021-11-03T17:00Z"),
    # UTC / BST / PDT triples and "(16:00 UTC)" in the name
    ("1.24", "Begin Code Freeze", "2022-03-30T01:00Z"),
    ("1.24", "Release retrospective part 2", "2022-05-11T16:00Z"),
    # one date written for both halves: "17:00 UTC / 09:00 PDT Tuesday 13th December"
    ("1.26", "Release retrospective Part 2", "2022-12-13T17:00Z"),
    # UTC/Pacific pairs whose Pacific half is wrong: the UTC half is the instant
    ("1.26", "Begin Code Freeze", "2022-11-09T01:00Z"),
    ("1.27", "Begin Code Freeze", "2023-03-15T01:00Z"),
    ("1.29", "Test Freeze", "2023-11-15T01:00Z"),
    ("1.31", "Test Freeze", "2024-07-31T01:00Z"),
    ("1.34", "Begin Enhancements Freeze", "2025-06-20T21:00Z"),
    # AoE: end of Thursday 16 October 2025 AoE is Friday 12:00 UTC
    ("1.35", "Begin Enhancements Freeze", "2025-10-17T12:00Z"),
    ("1.37", "Begin Code Freeze and Test Freeze", "2026-07-23T12:00Z"),
]


@pytest.mark.parametrize(("slug", "title", "at"), [i for i in INSTANTS if i[2]])
def test_hand_checked_instants_per_table_shape(history, slug, title, at):
    m = milestone(history, slug, title)
    assert m.at == utc(at), (slug, title, m.at)


def test_a_time_only_the_summary_gives_makes_the_table_row_an_instant(history):
    # 1.15's table says "Tuesday, April 30th, 2019"; its summary "Tuesday, April 30th, EOD PST".
    m = milestone(history, "1.15", "Enhancements Freeze")
    assert (m.at, m.on_date) == (utc("2019-05-01T07:00Z"), None)
    assert "Time from the summary (line 28): Tuesday, April 30th, EOD PST" in m.description
    assert milestone(history, "1.15", "Code Freeze").at == utc("2019-05-31T07:00Z")


@pytest.mark.parametrize(
    ("slug", "title", "first", "last"),
    [
        ("1.13", "Kubecon Shangai 2018", "2018-11-13", "2018-11-15"),  # "13 - 15" under Nov
        ("1.13", "1.14 Release Cycle Begins", "2019-01-02", None),  # the Jan column is the next year
        ("1.22", "KubeCon EU + Co-located events", "2021-05-03", "2021-05-07"),  # "May 3-7", no year
        ("1.12", "v1.12.0", "2018-09-27", None),  # "~~25~~ moved to **27**"
        ("1.17", "Start Enhancements Tracking", "2019-09-24", None),  # "Tue 24" below "Mon September 23"
    ],
)
def test_dates_ranges_and_struck_out_days(history, slug, title, first, last):
    m = milestone(history, slug, title)
    assert (m.at, m.on_date.isoformat(), m.ends_on.isoformat() if m.ends_on else None) == (None, first, last)


def test_undated_rows_are_kept_out_of_the_calendar_and_reported(history):
    assert history["1.19"][0].undated == ["row 27 'Code Thaw' (TBD)"]
    assert history["1.25"][0].undated == ["row 38 'Release retrospective part 2 (Time TBC)' (TBC)"]
    assert not [s for s, (spec, _w) in history.items() if spec.undated and s not in {"1.19", "1.25"}]


def messages(history, slug: str, title: str | None = None) -> list[str]:
    return [w.message for w in history[slug][1] if title is None or w.title == title]


def test_eod_pst_in_summer_is_named_with_both_readings(history):
    (message,) = [m for m in messages(history, "1.11", "Begin code freeze") if m.startswith("wrong zone label")]
    assert "'EOD PST' is read as the end of that day there, 00:00 PDT Wednesday 6 June 2018" in message
    assert "read literally as UTC-08:00 it would be 08:00 UTC Wednesday 6 June 2018" in message


@pytest.mark.parametrize(
    ("slug", "title", "summary", "table"),
    [
        ("1.10", "v1.10.0", "Wednesday 21 March 2018", "Monday 26 March 2018"),
        ("1.10", "End of code freeze", "Wednesday 14 March 2018", "Monday 19 March 2018"),
        ("1.11", "Start of Release Cycle", "Tuesday 3 April 2018", "Monday 2 April 2018"),
        ("1.30", "Test Freeze", "01:00 UTC Wednesday 20 March 2024", "01:00 UTC Wednesday 27 March 2024"),
        ("1.31", "Test Freeze", "02:00 UTC Wednesday 31 July 2024", "01:00 UTC Wednesday 31 July 2024"),
        ("1.36", "Begin Feature blog freeze - Open placeholder PRs", "Friday 27 February 2026", "Friday 6 March 2026"),
    ],
)
def test_summary_and_table_disagreements_name_both(history, slug, title, summary, table):
    found = [m for m in messages(history, slug, title) if m.startswith("summary and table disagree")]
    assert len(found) == 1, messages(history, slug)
    assert summary in found[0].split(", the table's")[0]
    assert table in found[0].split(", the table's")[1]
    assert found[0].endswith("the table is imported")


def test_a_wrong_weekday_in_a_summary_is_named(history):
    assert any(
        "'Friday, June 11th' is a Monday (Monday 11 June 2018)" in m
        for m in messages(history, "1.11", "Docs complete - All PRs reviewed and ready to merge")
    )


def test_the_placed_year_is_one_warning_per_release_saying_why(history):
    year = [m for m in messages(history, "1.19") if m.startswith("no year written")]
    assert year == [
        "no year written in 32 date(s) (rows 1-26, 28-33), e.g. 'Mon, April 13'; read as Monday 13 April 2020: "
        "it lies after 1.18 (starts Monday 6 January 2020) and before 1.20 (starts Monday 14 September 2020), "
        "and only 2020 fits the 38 weekdays written; all placed in 2020"
    ]


def test_releases_with_every_year_written_and_no_inconsistency_have_no_warning(history):
    assert [s for s, (_spec, warnings) in history.items() if not warnings] == ["1.23", "1.24", "1.37"]


# ------------------------------------------------------------- placing years


def test_a_readme_without_any_year_alone_is_a_problem_naming_file_release_and_row(db):
    with pytest.raises(ImportFailed) as info:
        schedule_import(path=readme("1.19"), today=TODAY)
    message = info.value.message
    assert str(readme("1.19")) in message
    assert "release 1.19: row 1 'Start of Release Cycle' ('Mon, April 13') has no year" in message
    assert "2015, 2020, 2026" in message  # every year whose weekdays fit, none guessed
    assert Release.objects.count() == 0


def test_a_readme_without_any_year_is_placed_by_its_neighbours_in_the_database(db):
    schedule_import(paths=[readme("1.18"), readme("1.20")], today=TODAY)
    result = schedule_import(path=readme("1.19"), today=TODAY)
    assert result.created == 32
    assert Release.objects.get(slug="1.19").start_date == dt.date(2020, 4, 13)


def test_dates_without_a_year_never_land_after_today(db):
    # 1.22 alone after 1.21: "Mon April 26" is a Monday in 2021 and 2027; 2027 is after today.
    schedule_import(paths=[readme("1.20"), readme("1.21")], today=TODAY)
    schedule_import(path=readme("1.22"), today=TODAY)
    assert Release.objects.get(slug="1.22").start_date == dt.date(2021, 4, 26)
    with pytest.raises(ImportFailed, match=r"the years whose weekdays fit are: none"):
        schedule_import(path=readme("1.22"), today=dt.date(2021, 3, 1))


def test_weekdays_that_fit_no_year_stop_the_import():
    text = (
        readme("1.19").read_text().replace("Mon, April 13", "Sun, April 13").replace("Tue, April  14", "Wed, April 14")
    )
    text = re.sub(r"\| (Mon|Tue|Wed|Thu|Fri), ", "| Sat, ", text)
    with pytest.raises(ImportFailed, match="cannot be placed with confidence"):
        schedule_parse(text, source="release-1.19.md", today=TODAY)


# ------------------------------------------------------------- the command


def test_the_command_imports_the_whole_history_in_one_transaction_and_again_changes_nothing(db, capsys):
    call_command("import_schedule", str(READMES))
    out, err = capsys.readouterr()
    assert Release.objects.count() == 28
    assert Milestone.objects.count() == sum(MILESTONES.values())
    assert "977 created, 0 updated, 0 unchanged" in out
    assert "  1.19 (release-1.19.md): 32 milestones: 32 created, 0 updated, 0 unchanged; 7 warnings; undated" in out
    assert "Warnings by kind: " in out
    assert err.count("WARNING: ") == int(re.search(r"(\d+) warnings\.", out).group(1)) > 0
    call_command("import_schedule", str(READMES))
    out, _err = capsys.readouterr()
    assert "0 created, 0 updated, 977 unchanged" in out


def test_strict_turns_warnings_into_problems_and_saves_nothing(db):
    with pytest.raises(CommandError, match=r"4 warning\(s\) and --strict: nothing was imported"):
        call_command("import_schedule", str(readme("1.10")), "--strict")
    assert Release.objects.count() == 0
    call_command("import_schedule", str(readme("1.24")), "--strict")
    assert Release.objects.get(slug="1.24").milestones.count() == 39


# ------------------------------------------------------------- bad input

MONTH_TABLE = """# Kubernetes 1.99 Release Schedule

**tl;dr** The 1.99 release cycle begins on **Tuesday, January 2nd, 2018**.

| **What** | **Who** | **JAN** | **FEB** | **DEV WEEK** |
| --- | --- | --- | --- | --- |
| Start of Release Cycle | Lead | 2 | | week 1 |
{row}
"""


@pytest.mark.parametrize(
    ("row", "error"),
    [
        ("| Code Freeze | Lead | 22 | 5 | |", "1.99 row 2 (line 8) 'Code Freeze': days in two month columns"),
        (
            "| Code Freeze | Lead |",
            "1.99 row 2 (line 8) 'Code Freeze': no day under any month column (the row has fewer",
        ),
        ("| | | 22 | | |", "1.99 row 2 (line 8): the row has a date but no milestone name"),
        ("| Code Freeze | Lead | soon | | |", "'soon' under January is not a day of the month"),
    ],
)
def test_merged_or_missing_cells_are_a_problem_naming_file_release_and_row(db, tmp_path, row, error):
    path = tmp_path / "release-1.99.md"
    path.write_text(MONTH_TABLE.format(row=row))
    with pytest.raises(CommandError) as info:
        call_command("import_schedule", str(path))
    assert str(path) in str(info.value)
    assert error in str(info.value)
    assert Release.objects.count() == 0


def test_a_when_table_row_without_its_when_cell_is_a_problem(db, tmp_path):
    path = tmp_path / "release-1.98.md"
    path.write_text(
        "# Kubernetes v1.98\n\n| **What** | **Who** | **When** | **Week** |\n|---|---|---|---|\n"
        "| Start of Release Cycle | Lead | Monday 13th May 2024 | week 1 |\n| Code Freeze | Lead |\n"
    )
    with pytest.raises(
        CommandError, match=r"1.98 row 2 \(line 6\) 'Code Freeze': the row has 2 cells and no When cell"
    ):
        call_command("import_schedule", str(path))


def test_a_readme_without_a_timeline_table_is_a_problem(db, tmp_path):
    path = tmp_path / "release-1.97.md"
    path.write_text("# Kubernetes v1.97\n\nThe schedule is in a spreadsheet this time.\n")
    with pytest.raises(CommandError, match=rf"{re.escape(str(path))}: release 1.97: no timeline table"):
        call_command("import_schedule", str(path))


def test_one_bad_file_in_a_directory_saves_nothing_of_the_others(db, tmp_path):
    for version in ("1.23", "1.24"):
        (tmp_path / f"release-{version}.md").write_text(readme(version).read_text())
    (tmp_path / "release-1.25.md").write_text("# Kubernetes v1.25\n\nNo table.\n")
    with pytest.raises(CommandError, match=r"1 file\(s\) cannot be imported; nothing was imported"):
        call_command("import_schedule", str(tmp_path))
    assert Release.objects.count() == 0


# ------------------------------------------- against the independent reading

SHARED_JSON = READMES.parent / "k8s-schedules.json"


def test_the_readmes_agree_with_the_independent_reading_in_k8s_schedules_json(history):
    """k8s-schedules.json is a reading of the 1.29, 1.30 and 1.33 READMEs made apart
    from this code: every row is here with the same instant or date, and every row its
    notes flag (wrong label, mismatch, summary conflict, missing year) has a warning."""
    data = json.loads(SHARED_JSON.read_text())
    checked = flagged = 0
    for slug, rows in data["releases"].items():
        warned = {w.title for w in history[slug][1]}
        for row in rows:
            m = milestone(history, slug, row["name"])
            if row["utc_iso"]:
                assert m.at == utc(row["utc_iso"]), (slug, row["name"])
            else:
                assert (m.at, m.on_date.isoformat()) == (None, row["date"]), (slug, row["name"])
            checked += 1
            if re.search(r"wrong|mismatch|CONFLICT|year missing", row["notes"], re.I):
                assert row["name"] in warned, (slug, row["name"], row["notes"])
                flagged += 1
    assert (checked, flagged) == (114, 9)


def test_a_utc_bst_pacific_triple_keeps_the_release_zone(history):
    m = milestone(history, "1.24", "Begin Code Freeze")
    assert (m.at, m.zone) == (utc("2022-03-30T01:00Z"), "America/Los_Angeles")


def test_the_old_names_of_the_freezes_get_their_kinds(history):
    kinds = {(m.title, m.kind) for m in history["1.12"][0].milestones}
    assert {('"Feature Freeze" begins', "enhancements-freeze"), ("Begin code and test freeze", "code-freeze")} <= kinds
    assert ("v1.12.0", "ga") in kinds
    assert milestone(history, "1.10", "1.11 Release Cycle Begins").kind == "other"  # the next release's start


def test_the_command_takes_several_files_and_places_the_one_between_them(db, capsys):
    call_command("import_schedule", str(readme("1.20")), str(readme("1.19")), str(readme("1.18")))
    out, _err = capsys.readouterr()
    assert [line.split(" (")[0].strip() for line in out.splitlines() if line.startswith("  1.")] == [
        "1.18",
        "1.19",
        "1.20",
    ]
    assert Release.objects.get(slug="1.19").milestones.get(title="Begin Code Freeze").at == utc("2020-07-10T07:00Z")


@pytest.mark.parametrize(
    ("slug", "title", "summary_week", "table_week"),
    [
        ("1.22", "Release retrospective", 16, "Week 17"),
        ("1.26", "Release retrospective part 1", 10, "week 9"),
        ("1.33", "KubeCon EU", 13, "week 12"),  # flagged in k8s-schedules.json's notes too
    ],
)
def test_a_summary_week_that_is_not_the_table_week_is_named(history, slug, title, summary_week, table_week):
    (message,) = [m for m in messages(history, slug, title) if m.startswith("summary and table disagree on the week")]
    assert f"says Week {summary_week}, the table's row says '{table_week}' (same date)" in message
