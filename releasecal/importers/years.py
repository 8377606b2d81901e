"""Year placement: the year of a release's dates written without one ("Monday 6th
May"), decided once for the whole release from its other rows, its summary, the years
its README mentions or its neighbouring releases, with the weekdays written as the
check (``place_year``). Pure."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from releasecal import tz
from releasecal.importers.files import ImportFailed
from releasecal.importers.schedule_text import WrittenDate, YearPlacement


@dataclass(frozen=True)
class YearContext:
    """What places a release whose dates are written without a year, beside its own
    text: the releases just before and after it (slug, start date), and today (an
    inferred year never puts a date after it)."""

    before: tuple[str, dt.date] | None = None
    after: tuple[str, dt.date] | None = None
    today: dt.date | None = None


class YearUnplaceable(ImportFailed):
    """A release's dates have no year and nothing places them with confidence."""


def _start_year(date: WrittenDate, first_month: int) -> int:
    return date.year if date.month >= first_month else date.year - 1


def _placed(date: WrittenDate, place: YearPlacement) -> dt.date | None:
    try:
        return dt.date(place.year_for(date.month), date.month, date.day)
    except ValueError:
        return None


def _weekday_misses(dates: list[WrittenDate], place: YearPlacement) -> int:
    misses = 0
    for date in dates:
        if date.weekday is None:
            continue
        day = _placed(date, place)
        misses += day is None or day.weekday() != date.weekday
    return misses


def place_year(
    slug: str,
    table: list[WrittenDate],
    summary: list[WrittenDate],
    readme_years: list[int],
    context: YearContext,
    first_row: str,
) -> YearPlacement | None:
    """The year a release's cycle starts in, for its dates written without one: from
    the years of its other rows, else its summary's dates, else the years its README
    mentions, else its neighbouring releases; the weekdays written must agree, and an
    inferred year never puts a date after today. None when every date has its year."""
    missing = [d for d in table + summary if d.year is None]
    if not missing:
        return None
    first_month = (table or summary)[0].month
    with_weekday = [d for d in missing if d.weekday is not None]
    today = context.today or tz.utc_now().date()
    for dates, source in ((table, "the release's other rows"), (summary, "the README's summary")):
        written = [_start_year(d, first_month) for d in dates if d.year is not None]
        if written:
            year = max(set(written), key=written.count)
            place = YearPlacement(year, first_month, "")
            agree = len(with_weekday) - _weekday_misses(with_weekday, place)
            why = f"{source} give{'s' if source.endswith('summary') else ''} the year" + (
                f", and {agree} of {len(with_weekday)} weekdays written agree" if with_weekday else ""
            )
            return YearPlacement(year, first_month, why)
    if readme_years:
        candidates = sorted({y for year in readme_years for y in (year - 1, year)})
        source = f"the README mentions {', '.join(map(str, sorted(set(readme_years))))}"
        low, high = None, None
    else:
        low = context.before[1] if context.before else None
        high = context.after[1] if context.after else None
        if low is None and high is None:
            low = today.replace(year=today.year - 30)
        elif low is None:
            low = high.replace(year=high.year - 2)
        high = min(high or today, today)
        candidates = list(range(low.year, high.year + 1))
        around = [f"after {context.before[0]} (starts {tz.render_date(context.before[1])})"] if context.before else []
        if context.after:
            around.append(f"before {context.after[0]} (starts {tz.render_date(context.after[1])})")
        source = "it lies " + " and ".join(around) if around else "nothing in the README gives a year"
    fits = []
    for year in candidates:
        place = YearPlacement(year, first_month, "")
        days = [_placed(d, place) for d in missing]
        if any(day is None for day in days):
            continue
        if max(days) > today:
            continue  # never a guess into the future
        if low is not None and min(days) < low - dt.timedelta(days=31):
            continue
        if high is not None and context.after and min(days) >= context.after[1]:
            continue
        misses = _weekday_misses(with_weekday, place)
        if misses <= len(with_weekday) // 10:
            fits.append((year, misses))
    if len(fits) != 1 or not with_weekday:
        shown = ", ".join(str(y) for y, _ in fits) or "none"
        raise YearUnplaceable(
            f"release {slug}: {first_row} has no year and it cannot be placed with confidence: {source}, and "
            f"the years whose weekdays fit are: {shown}. Import it with its neighbouring releases "
            "(import_schedule DIR) or after them, or write the year."
        )
    year, misses = fits[0]
    return YearPlacement(
        year,
        first_month,
        f"{source}, and only {year} fits the {len(with_weekday)} weekdays written"
        + (f" ({misses} of them wrong)" if misses else ""),
    )


def release_version(slug: str) -> tuple[int, ...] | None:
    """``"1.31"`` -> ``(1, 31)``; None for a slug that is not a version."""
    try:
        return tuple(int(part) for part in slug.split("."))
    except ValueError:
        return None


def year_context(slug: str | None, starts: dict[str, dt.date], today: dt.date) -> YearContext:
    """The releases just before and after ``slug`` (by version) whose start is known."""
    key = release_version(slug) if slug else None
    if key is None:
        return YearContext(today=today)
    known = sorted((release_version(s), s, d) for s, d in starts.items() if s != slug and release_version(s) and d)
    before = [(s, d) for v, s, d in known if v < key]
    after = [(s, d) for v, s, d in known if v > key]
    return YearContext(before=before[-1] if before else None, after=after[0] if after else None, today=today)
