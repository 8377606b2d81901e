"""The release cycle drawn as an SVG, laid out on the server.

Weeks are columns, freezes are vertical lines, windows (code freeze → thaw) are bands,
other milestones are diamonds, and "now" is a dashed line. Labels are packed into as few
lanes as fit without overlapping, so a 20-milestone cycle stays a compact picture.

The layout is computed here (plain numbers); ``pages/_timeline.svg`` draws it, so every
text is escaped by the template engine. Dates on the axis are calendar dates in the
release's own zone; instants in tooltips come from ``releasecal.tz``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.template.loader import render_to_string
from django.utils import dateformat
from django.utils.safestring import SafeString

from releasecal import tz
from releasecal.models import Milestone, Release

WIDTH = 1000
MARGIN_X = 12
AXIS_Y = 44
LANE_TOP = 62
LANE_HEIGHT = 26
# Average advance of the 12px label font (semi-bold for what is still ahead, regular for
# what has passed), on the generous side so that labels never collide.
CHAR_WIDTH = 7.6
CHAR_WIDTH_PAST = 7.0
LABEL_GAP = 10


@dataclass
class Week:
    x: float
    number: int
    label: str
    show_label: bool

    @property
    def label_x(self) -> float:
        return round(self.x + 4, 1)


@dataclass
class Item:
    milestone: Milestone
    kind: str  # "freeze", "window" or "event"
    x: float
    x_end: float | None
    lane: int = 0
    label_x: float = 0.0
    anchor: str = "start"
    past: bool = False
    tooltip: str = ""

    @property
    def y(self) -> float:
        return LANE_TOP + self.lane * LANE_HEIGHT + LANE_HEIGHT / 2

    @property
    def band_width(self) -> float:
        return round(max((self.x_end or self.x) - self.x, 2.0), 1)

    @property
    def label_y(self) -> float:
        return self.y + 4

    @property
    def square(self) -> str:
        """SVG path of the freeze marker: an 8x8 square centred on the lane."""
        return f"M{self.x - 4:.1f} {self.y - 4:.1f}h8v8h-8z"

    @property
    def bar_y(self) -> float:
        return self.y - 5

    @property
    def diamond(self) -> str:
        return f"M{self.x:.1f} {self.y - 6:.1f}l6 6l-6 6l-6 -6z"


@dataclass
class Layout:
    release: Release
    width: int
    height: int
    axis_y: int
    lanes_bottom: float
    band_height: float
    now_top: float
    weeks: list[Week]
    items: list[Item]
    now_x: float | None
    title: str
    description: str
    start_label: str = ""
    end_label: str = ""
    lane_count: int = 0
    extras: dict = field(default_factory=dict)


def _span(milestone: Milestone) -> tuple[dt.datetime, dt.datetime | None]:
    start = milestone.starts
    if milestone.ends_at is not None:
        return start, milestone.ends_at
    if milestone.ends_on is not None:
        return start, tz.end_of_day(milestone.ends_on, milestone.zone)
    return start, None


def _short_date(day: dt.date) -> str:
    return dateformat.format(day, "j M")


def timeline_layout(*, release: Release, milestones: Iterable[Milestone], now: dt.datetime | None = None) -> Layout:
    """Place every milestone of ``release`` on a horizontal time axis."""
    now = now or tz.utc_now()
    milestones = [m for m in milestones if not m.cancelled]
    zone = release.zone
    first_day = release.start_date
    last_day = release.ga_date or release.start_date + dt.timedelta(weeks=15)
    spans = [_span(m) for m in milestones]
    if spans:
        first_day = min(first_day, *(tz.local_date(start, zone) for start, _ in spans))
        last_day = max(last_day, *(tz.local_date(end or start, zone) for start, end in spans))
    # Whole weeks from the Monday on or before the first day, one spare day at the end.
    first_day -= dt.timedelta(days=first_day.weekday())
    last_day += dt.timedelta(days=1)
    start = tz.start_of_day(first_day, zone)
    end = tz.end_of_day(last_day, zone)
    total = (end - start).total_seconds()
    inner = WIDTH - 2 * MARGIN_X

    def scale(instant: dt.datetime) -> float:
        return round(MARGIN_X + inner * (instant - start).total_seconds() / total, 1)

    weeks: list[Week] = []
    day = first_day
    number = 1
    week_count = ((last_day - first_day).days // 7) + 1
    every = 1 if week_count <= 20 else 2
    while day <= last_day:
        weeks.append(
            Week(
                x=scale(tz.start_of_day(day, zone)),
                number=number,
                label=_short_date(day),
                show_label=(number - 1) % every == 0,
            )
        )
        day += dt.timedelta(weeks=1)
        number += 1

    items: list[Item] = []
    for milestone, (begin, finish) in sorted(zip(milestones, spans, strict=True), key=lambda pair: pair[1][0]):
        kind = "window" if finish is not None else ("freeze" if milestone.kind.is_freeze else "event")
        items.append(
            Item(
                milestone=milestone,
                kind=kind,
                x=scale(begin),
                x_end=scale(finish) if finish is not None else None,
                past=milestone.state_at(now) in ("passed", "closed"),
                tooltip=f"{milestone.title}: {milestone.display()}",
            )
        )

    # Greedy lane packing: each label takes the first lane where it fits.
    lane_ends: list[float] = []
    for item in items:
        label_width = len(item.milestone.title) * (CHAR_WIDTH_PAST if item.past else CHAR_WIDTH)
        right_edge = item.x_end if item.x_end is not None else item.x
        if right_edge + LABEL_GAP + label_width <= WIDTH - MARGIN_X:
            item.anchor = "start"
            item.label_x = round(right_edge + LABEL_GAP, 1)
            occupied = (item.x - 6, item.label_x + label_width)
        else:
            item.anchor = "end"
            item.label_x = round(item.x - LABEL_GAP, 1)
            occupied = (item.label_x - label_width, (item.x_end or item.x) + 6)
        for lane, lane_end in enumerate(lane_ends):
            if occupied[0] > lane_end + 8:
                item.lane = lane
                lane_ends[lane] = occupied[1]
                break
        else:
            item.lane = len(lane_ends)
            lane_ends.append(occupied[1])

    lane_count = max(len(lane_ends), 1)
    lanes_bottom = LANE_TOP + lane_count * LANE_HEIGHT
    now_x = scale(now) if start <= now <= end else None
    weeks_total = len(weeks)
    description = (
        f"{weeks_total} weeks from {tz.render_date(release.start_date)}"
        + (f" to {tz.render_date(release.ga_date)}" if release.ga_date else "")
        + f", {len(items)} milestones; every one is listed in the table below."
    )
    return Layout(
        release=release,
        width=WIDTH,
        height=int(lanes_bottom + 22),
        axis_y=AXIS_Y,
        lanes_bottom=lanes_bottom,
        band_height=lanes_bottom - AXIS_Y,
        now_top=AXIS_Y - 6,
        weeks=weeks,
        items=items,
        now_x=now_x,
        title=f"Timeline of {release.name or release.slug}",
        description=description,
        lane_count=lane_count,
    )


def timeline_render(layout: Layout) -> SafeString:
    """A laid-out timeline as inline SVG markup."""
    return SafeString(render_to_string("pages/_timeline.svg", {"t": layout}).strip())
