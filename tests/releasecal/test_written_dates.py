"""One reader of written dates and one table of month and weekday names (issue 23).

``tz.find_written_date`` finds the date in a person's text for both readers of human
times: the exception reader's deadlines (``tz.read_deadline_text``) and the schedule
importer's free-text times (``parse_when``). The names come from ``tz.names`` alone:
no other module of the project spells out a table of them."""

from __future__ import annotations

import ast
import datetime as dt
import re
from pathlib import Path

import pytest

from releasecal import tz
from releasecal.importers.schedule_text import parse_when

ROOT = Path(__file__).resolve().parents[2]
LA = "America/Los_Angeles"


@pytest.mark.parametrize(
    ("word", "month"),
    [("January", 1), ("jan", 1), ("Feb.", 2), ("Sept", 9), ("september", 9), ("JUNE", 6), ("Jun", 6),
     ("Marching", None), ("Febuary", None), ("", None), (None, None)],
)  # fmt: skip
def test_a_month_is_read_from_its_name_or_a_written_abbreviation(word, month):
    assert tz.month_number(word) == month


@pytest.mark.parametrize(
    ("word", "weekday"),
    [("Monday", 0), ("Tues", 1), ("tue", 1), ("Weds", 2), ("Thur", 3), ("Thurs", 3), ("Thursday", 3),
     ("Sat.", 5), ("Sunday,", 6), ("Mondays", None), ("Th", None)],
)  # fmt: skip
def test_a_weekday_is_read_from_its_name_or_a_written_abbreviation(word, weekday):
    assert tz.weekday_number(word) == weekday


def test_the_names_rendered_are_the_names_read():
    for number, name in enumerate(tz.MONTHS, start=1):
        assert tz.month_number(name) == number == tz.month_number(name[:3])
    for number, name in enumerate(tz.WEEKDAYS):
        assert tz.weekday_number(name) == number == tz.weekday_number(name[:3])
        assert tz.render_date(dt.date(2024, 7, 1) + dt.timedelta(days=number)).startswith(name)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("18:00 PST Friday, 21st June 2024", {"month": 6, "day": 21, "year": 2024, "weekday": 4}),
        ("until the 21st of June", {"month": 6, "day": 21, "year": None, "weekday": None}),
        ("Mon August 23, 2021", {"month": 8, "day": 23, "year": 2021, "weekday": 0}),
        ("EOD 2024-06-21 CET", {"month": 6, "day": 21, "year": 2024, "iso": "2024-06-21"}),
        ("Tuesday 14th November2023", {"month": 11, "day": 14, "year": 2023, "weekday": 1}),
        (
            "Monday 6th - Thursday 9th November 2023",
            {"month": 11, "day": 6, "last_month": 11, "last_day": 9, "weekday": 0, "last_weekday": 3,
             "first_text": "Monday 6th", "last_text": "Thursday 9th November 2023"},
        ),
        ("Monday 22st April", {"month": 4, "day": 22, "ordinal_typos": ("'22st' for the 22nd",)}),
    ],
)  # fmt: skip
def test_a_written_date_is_found_as_written(text, found):
    written = tz.find_written_date(text)
    assert written is not None
    assert {key: getattr(written, key) for key in found} == found


@pytest.mark.parametrize("text", ["EOD Friday PST", "in 3 days", "18:00 UTC", "version 1.31", ""])
def test_a_text_without_a_date_has_none(text):
    assert tz.find_written_date(text) is None


@pytest.mark.parametrize(
    "text",
    ["Friday 21st June 2024", "21 June 2024", "June 21, 2024", "2024-06-21", "Fri Jun 21 2024"],
)
def test_both_readers_read_the_same_day(text):
    deadline = tz.read_deadline_text(f"{text} AoE")
    schedule = parse_when(text, zone=LA)
    assert deadline.day == schedule.on_date == dt.date(2024, 6, 21)


def _strings_outside_docstrings(tree: ast.AST):
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node


# A table or a pattern of names: "jan|feb", "jan(?:uary)?|feb", ("January", "February", ...
_MONTH_TABLE = re.compile(r"\bjan(?:uary)?(?:\(\?:uary\)\?)?['\"]?\s*[|,:]\s*(?:\d+\s*,\s*)?['\"]?feb", re.I)
_WEEKDAY_TABLE = re.compile(r"\bmon(?:day)?(?:\(\?:day\)\?)?['\"]?\s*[|,:]\s*(?:\d+\s*,\s*)?['\"]?tue", re.I)


def _project_modules():
    """The project's Python modules: not the tests, the virtualenv or the migrations."""
    for top in sorted(ROOT.iterdir()):
        if top.is_file() and top.suffix == ".py":
            yield top
        elif top.is_dir() and not top.name.startswith(".") and top.name not in {"node_modules", "tests", "mutants"}:
            yield from (p for p in sorted(top.rglob("*.py")) if "migrations" not in p.parts)


def test_no_module_but_the_time_package_holds_a_table_of_month_or_weekday_names():
    names = ROOT / "releasecal" / "tz" / "names.py"
    found = []
    for path in _project_modules():
        if path == names:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _strings_outside_docstrings(tree):
            if _MONTH_TABLE.search(node.value) or _WEEKDAY_TABLE.search(node.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        for node in ast.walk(tree):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
                items = node.keys if isinstance(node, ast.Dict) else node.elts
                words = {i.value.lower()[:3] for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
                if {"jan", "feb", "mar"} <= words or {"mon", "tue", "wed"} <= words:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == [], "month or weekday names outside releasecal/tz/names.py: " + ", ".join(found)


@pytest.mark.parametrize(
    ("text", "hour", "minute", "ampm"),
    [("18:00 PST Friday", 18, 0, ""), ("until 17:00:30 UTC", 17, 0, ""), ("by 5pm CET", 5, 0, "p"),
     ("5:30 p.m. ET", 5, 30, "p"), ("10:00 AM (PDT)", 10, 0, "a"), ("24:00 UTC", 24, 0, "")],
)  # fmt: skip
def test_a_written_clock_is_found_as_written(text, hour, minute, ampm):
    clock = tz.find_written_clock(text)
    assert (clock.hour, clock.minute, clock.ampm) == (hour, minute, ampm)


@pytest.mark.parametrize("text", ["Friday 21 June 2024", "in 3 days", "1.31 release", "EOD PST"])
def test_a_text_without_a_clock_has_none(text):
    assert tz.find_written_clock(text) is None


@pytest.mark.parametrize(
    ("text", "instant"),
    [("18:00 UTC Friday 21st June 2024", dt.datetime(2024, 6, 21, 18, tzinfo=dt.UTC)),
     ("6:00 pm UTC 21 June 2024", dt.datetime(2024, 6, 21, 18, tzinfo=dt.UTC)),
     ("EOD Friday 21 June 2024 UTC", dt.datetime(2024, 6, 22, tzinfo=dt.UTC))],
)  # fmt: skip
def test_both_readers_read_the_same_instant(text, instant):
    assert tz.read_deadline_text(text).instant == instant
    assert parse_when(text, zone=LA).at == instant


def test_a_29_february_without_a_year_that_falls_in_a_common_year_is_refused_not_a_crash():
    # Written in April 2024, "29 February" is more than a month past: next year's, which has none.
    reading = tz.read_deadline_text("EOD 29 February UTC", reference=dt.datetime(2024, 4, 15, tzinfo=dt.UTC))
    assert (reading.instant, reading.problem) == (None, "'29 February' is not a date in 2025")
    # Written in February 2024 it is this year's.
    reading = tz.read_deadline_text("EOD 29 February UTC", reference=dt.datetime(2024, 2, 10, tzinfo=dt.UTC))
    assert reading.instant == dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
