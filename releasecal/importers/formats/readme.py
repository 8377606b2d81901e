"""Format ``k8s-readme``: the timeline table of a sig-release
``releases/release-1.XX/README.md`` (every shape since 1.10: a *When* column, day cells
under month heading rows, or one column per month; markdown or HTML), with the
README's summary (bullets or tl;dr) cross-checked against the table."""

from __future__ import annotations

import datetime as dt
import re

from releasecal import tz
from releasecal.errors import ValidationFailed
from releasecal.importers.files import ImportFailed
from releasecal.importers.formats.kubernetes import SCHEDULE_FIELDS, kubernetes_release
from releasecal.importers.schedule_text import Table, clean_markdown, month_of, read_summary, read_timeline_table
from releasecal.importers.specs import ImportWarning, ParsedSchedule, fill_release_dates
from releasecal.importers.years import YearContext, YearUnplaceable

_README_RELEASE = re.compile(r"Kubernetes v?(\d+\.\d+)\b|release-(\d+\.\d+)\b|\b(1\.\d+) release cycle\b")
_DAY_CELL = re.compile(
    rf"(?:(?P<wd>\b{tz.WEEKDAY_WORD})\.?,?\s*)?(?P<d1>\d{{1,2}})(?:\s*[-\u2013]\s*(?P<d2>\d{{1,2}}))?\b",
    re.I,
)
_STRUCK_CELL = re.compile(r"~~(.*?)~~")


def readme_slug(text: str) -> str | None:
    """The release a README is for ("Kubernetes v1.31", "release-1.31"), or None."""
    match = _README_RELEASE.search(text)
    return next(g for g in match.groups() if g) if match else None


def _month_cell(cell: str, month: int) -> tuple[str, list[str]]:
    """A day under a month column ("2", "Mon 7", "13 - 15", "~~25~~ moved to **27**",
    "27?") as a date text, and notes on what the cell says beside the day."""
    struck = [clean_markdown(s)[0] for s in _STRUCK_CELL.findall(cell)]
    text = clean_markdown(_STRUCK_CELL.sub(" ", cell))[0]
    match = _DAY_CELL.search(text)
    if not match:
        raise ValidationFailed(f"'{cell}' under {tz.MONTHS[month - 1]} is not a day of the month.")
    name = tz.MONTHS[month - 1]
    when = f"{match['d1']} - {match['d2']} {name}" if match["d2"] else f"{match['d1']} {name}"
    if match["wd"]:
        when = f"{match['wd']} {when}"
    notes = []
    if struck:
        notes.append(
            f"'{cell}' under {name}: the struck-out day {', '.join(struck)} was replaced; "
            f"read as {match.group(0)} {name}"
        )
    if "?" in text:
        notes.append(f"'{cell}' under {name} is marked tentative ('?'); read as {match.group(0)} {name}")
    return when, notes


def _readme_rows(table: Table, slug: str, errors: list[str]) -> list[dict]:
    """The timeline table as rows of {what, who, when, week}: a *When* column (with
    day-only cells under month heading rows) or one column per month."""
    names = [clean_markdown(c)[0].lower() for c in table.header]
    what = names.index("what")
    who = names.index("who") if "who" in names else None
    when = names.index("when") if "when" in names else None
    time = next((i for i, n in enumerate(names) if n in {"time", "time (utc)"}), None)
    week = next((i for i, n in enumerate(names) if "week" in n), None)
    months = [(i, month_of(h)) for i, h in enumerate(table.header) if month_of(h)]
    heading_month: int | None = None
    rows = []
    for row in table.rows:
        cells = row.cells + [""] * (len(names) - len(row.cells))
        title = clean_markdown(cells[what])[0]
        where = f"{slug} row {row.number} (line {row.line})"
        others = [clean_markdown(c)[0] for i, c in enumerate(row.cells) if i != what]
        if month_of(cells[what]) and not any(others):
            heading_month = month_of(cells[what])
            continue
        notes = []
        extra = [c for c in row.cells[len(names) :] if clean_markdown(c)[0]]
        if not title:
            # "| | 1.11-blocking, master-blocking |": the rest of the row above, split over two lines.
            shown = " | ".join(o for o in others if o)
            if any(others) and not any(_looks_like_day(o) for o in others):
                rows.append({"_stray": f"line {row.line} has no milestone name and no date: '{shown}'"})
                continue
            errors.append(f"{where}: the row has a date but no milestone name (merged or missing cells?): '{shown}'")
            continue
        if months:
            filled = [(i, m) for i, m in months if clean_markdown(_STRUCK_CELL.sub("", cells[i]))[0]]
            if len(filled) > 1:
                shown = ", ".join(f"'{cells[i]}' under {tz.MONTHS[m - 1]}" for i, m in filled)
                errors.append(f"{where} '{title}': days in two month columns ({shown}): merged cells?")
                continue
            if not filled:
                missing = ""
                if len(row.cells) < len(names):
                    missing = " (the row has fewer cells than the header: missing cells?)"
                errors.append(f"{where} '{title}': no day under any month column{missing}.")
                continue
            index, month = filled[0]
            try:
                when_text, notes = _month_cell(cells[index], month)
            except ValidationFailed as exc:
                errors.append(f"{where} '{title}': {exc.message}")
                continue
        else:
            if when is None or len(row.cells) <= when:
                errors.append(
                    f"{where} '{title}': the row has {len(row.cells)} cells and no When cell "
                    f"(the header has {len(names)}: merged or missing cells?)."
                )
                continue
            when_text = cells[when]
            written_month = re.search(_MONTH_WORD, clean_markdown(when_text)[0], re.I)
            if written_month:
                heading_month = month_of(written_month.group(0)[:3]) or heading_month
            elif heading_month and re.search(r"\d", when_text):
                # "Tue 24" under "Mon September 23" (or under a month heading row).
                notes.append(
                    f"no month in '{clean_markdown(when_text)[0]}': read in {tz.MONTHS[heading_month - 1]}, "
                    "the month of the rows above"
                )
                when_text = f"{when_text} {tz.MONTHS[heading_month - 1]}"
        if time is not None and clean_markdown(cells[time])[0]:
            when_text = f"{when_text} {cells[time]}"
        if extra:
            notes.append(
                f"the row has {len(row.cells)} cells, the header {len(names)}: extra cell(s) "
                f"{', '.join(repr(e) for e in extra)} ignored"
            )
        rows.append(
            {
                "what": cells[what],
                "who": cells[who] if who is not None else "",
                "when": when_text,
                "week": clean_markdown(cells[week])[0] if week is not None else "",
                "_row": row.number,
                "_notes": notes,
            }
        )
    return rows


def _looks_like_day(cell: str) -> bool:
    # CI board names ("1.11-blocking") carry digits that are not days.
    return bool(re.search(r"\d", cell)) and not re.search(r"blocking|upgrade|informing", cell)


# A month word alone ("November2023" is not one here: it keeps the month of the rows above,
# with the warning, as every import of 1.29 and 1.32 has read it).
_MONTH_WORD = rf"\b{tz.MONTH_WORD}\b"


def parse_readme(
    text: str, *, release_slug: str | None, zone: str | None, today: dt.date, years: YearContext | None = None
) -> ParsedSchedule:
    """The Timeline table of a sig-release ``releases/release-1.XX/README.md``, with its
    summary (bullets or tl;dr) cross-checked against it."""
    slug = release_slug or readme_slug(text)
    if not slug:
        raise ImportFailed("Cannot tell which release this README is for; pass --release.")
    table = read_timeline_table(text)
    if table is None:
        raise ImportFailed(
            f"release {slug}: no timeline table (a table whose header has What and When, or What and month columns)."
        )
    errors: list[str] = []
    warnings: list[ImportWarning] = []
    rows = _readme_rows(table, slug, errors)
    for number, row in enumerate(rows):
        if "_stray" in row:
            previous = next((r for r in reversed(rows[:number]) if "_row" in r), None)
            label = clean_markdown(previous["what"])[0] if previous else "?"
            warnings.append(
                ImportWarning(
                    slug,
                    previous["_row"] if previous else 0,
                    label,
                    f"{row['_stray']}; it reads as the rest of this row split over two lines and is ignored",
                )
            )
    rows = [r for r in rows if "_stray" not in r]
    body = text[: table_start(text, table)] + "\n" + text[table_end(text, table) :]
    readme_years = [int(y) for y in re.findall(r"\b(20\d\d)\b", body)]
    context = years or YearContext(today=today)
    if context.today is None:
        context = YearContext(before=context.before, after=context.after, today=today)
    spec = kubernetes_release(
        slug,
        rows,
        zone=zone,
        fields=SCHEDULE_FIELDS,
        errors=errors,
        warnings=warnings,
        context=context,
        summary=read_summary(text),
        readme_years=readme_years,
    )
    if errors:
        unplaceable = [e for e in errors if "cannot be placed with confidence" in e]
        if unplaceable and len(unplaceable) == len(errors):
            raise YearUnplaceable(unplaceable[0])
        raise ImportFailed(f"{len(errors)} problem(s) in the schedule; nothing was imported:", errors=errors)
    if not spec.milestones:
        raise ImportFailed(f"release {slug}: the timeline table has no dated rows.")
    fill_release_dates(spec, today)
    return ParsedSchedule(format="k8s-readme", releases=[spec], warnings=warnings)


def table_start(text: str, table: Table) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(line) for line in lines[: table.line - 1])


def table_end(text: str, table: Table) -> int:
    lines = text.splitlines(keepends=True)
    last = table.rows[-1].line if table.rows else table.line
    return sum(len(line) for line in lines[:last])
