"""What every API output shares: instant fields, the viewer's zone, and strict input.

Instants: an output serializer lists its instants in ``instant_fields`` and gets, for
each name ``x``, three fields: ``x`` (UTC, ISO 8601 with ``Z``), ``x_local`` (the
instant in its native zone, ``{datetime, timezone, abbreviation, display}``) and, when
the request has ``?tz=``, ``x_viewer`` (the same shape in the viewer's zone). All of it
is produced by ``releasecal.tz``; nothing here formats a zone label.

Errors are in ``api.errors``, throttles in ``api.throttles``, paging in ``api.pagination``.
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import Any

import django_filters
from django import forms
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request

from releasecal import tz
from releasecal.errors import DomainError

# ----------------------------------------------------------------- viewer zone


def viewer_zone(request: Request) -> str | None:
    """The zone named by ``?tz=``, canonical; None when absent. A bad zone is a 400."""
    raw = request.query_params.get("tz")
    if raw is None or raw == "":
        return None
    return tz.normalize_zone_name(raw)


TZ_PARAMETER = OpenApiParameter(
    "tz",
    OpenApiTypes.STR,
    description="Also show every instant in this zone (`x_viewer`): an IANA name such as "
    "`Europe/Berlin`, or `AoE`. An unknown zone is a 400.",
    required=False,
)


def serializer_context(request: Request) -> dict[str, Any]:
    return {"request": request, "viewer_zone": viewer_zone(request)}


# ------------------------------------------------------------------ time fields


def _resolve(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if obj is None:
            return None
        obj = obj.get(part) if isinstance(obj, dict) else getattr(obj, part, None)
    return obj


class LocalTimeSerializer(serializers.Serializer):
    """Documentation shape of ``x_local`` / ``x_viewer``."""

    datetime = serializers.CharField(help_text="ISO 8601 with the zone's UTC offset")
    timezone = serializers.CharField(help_text="IANA name, or AoE")
    abbreviation = serializers.CharField(help_text="In force at that instant: PDT in July, PST in December")
    display = serializers.CharField(
        help_text="19:00 PDT Friday 26 July 2024 (02:00 UTC Saturday 27 July 2024); a deadline at the first "
        "instant of a day is the end of the day before: end of Thursday 10 December 2026 AoE (12:00 UTC "
        "Friday 11 December 2026)"
    )
    deadline_day = serializers.DateField(
        required=False, help_text="Deadlines only: the date the deadline closes on, in this zone (ISO)"
    )


@extend_schema_field({"type": "string", "format": "date-time", "nullable": True, "example": "2024-07-27T02:00:00Z"})
class UtcInstantField(serializers.Field):
    def __init__(self, *, instant: str, **kwargs):
        self.instant_path = instant
        kwargs.setdefault("source", "*")
        super().__init__(**kwargs)

    def to_representation(self, obj: Any) -> str | None:
        instant = _resolve(obj, self.instant_path)
        return _utc_text(instant) if instant is not None else None


@tz.rules_cache_register
@functools.lru_cache(maxsize=4096)
def _local_time(instant: dt.datetime, zone: str, deadline: bool) -> tuple[tuple[str, str], ...]:
    # A list repeats the same freeze and zone on every row; render each pair once.
    return tuple(tz.local_time(instant, zone, deadline=deadline).as_dict().items())


@functools.lru_cache(maxsize=4096)
def _utc_text(instant: dt.datetime) -> str:
    return tz.isoformat_utc(instant)


@extend_schema_field(LocalTimeSerializer(allow_null=True))
class LocalTimeField(serializers.Field):
    """The instant at ``instant`` seen in the zone at ``zone`` (a path on the object), or
    in the viewer's zone from the serializer context when ``viewer=True``."""

    def __init__(self, *, instant: str, zone: str = "", viewer: bool = False, deadline: bool = False, **kwargs):
        self.instant_path = instant
        self.zone_path = zone
        self.viewer = viewer
        self.deadline = deadline
        kwargs.setdefault("source", "*")
        super().__init__(**kwargs)

    def to_representation(self, obj: Any) -> dict[str, str] | None:
        instant = _resolve(obj, self.instant_path)
        zone = self.context.get("viewer_zone") if self.viewer else _resolve(obj, self.zone_path)
        if instant is None or not zone:
            return None
        return dict(_local_time(instant, zone, self.deadline))


class TimeAwareOutputSerializer(serializers.Serializer):
    """An output serializer with instant triples.

    ``instant_fields = {"deadline": ("deadline", "zone")}`` adds ``deadline``,
    ``deadline_local`` and ``deadline_viewer``; both paths are dotted attribute paths
    on the serialized object. Names in ``deadline_fields`` are deadlines: their
    ``display`` is worded as people say it and they carry ``deadline_day``.
    """

    instant_fields: dict[str, tuple[str, str]] = {}
    deadline_fields: frozenset[str] = frozenset()

    def _without_viewer(self) -> bool:
        """A response to a request that named no ``?tz=`` (the context says so with
        ``viewer_zone: None``): its ``x_viewer`` fields are not built at all, rather than
        rendered empty and dropped on every row of a list (a tenth of the 300-row list's
        work). Without that key (a serializer made without a request), or for the schema
        (drf-spectacular marks the views it reads with ``swagger_fake_view``), every field
        is declared."""
        if getattr(self.context.get("view"), "swagger_fake_view", False):
            return False
        return "viewer_zone" in self.context and not self.context["viewer_zone"]

    def get_fields(self):
        fields = super().get_fields()
        without_viewer = self._without_viewer()
        for name, (instant, zone) in self.instant_fields.items():
            deadline = name in self.deadline_fields
            fields[name] = UtcInstantField(instant=instant, help_text="UTC, ISO 8601, Z")
            fields[f"{name}_local"] = LocalTimeField(
                instant=instant, zone=zone, deadline=deadline, help_text="In its native zone"
            )
            if without_viewer:
                continue
            fields[f"{name}_viewer"] = LocalTimeField(
                instant=instant,
                viewer=True,
                deadline=deadline,
                required=False,
                help_text="In the zone given by ?tz= (only then)",
            )
        return fields

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if not self.context.get("viewer_zone"):
            for name in self.instant_fields:
                data.pop(f"{name}_viewer", None)
        return data


# ----------------------------------------------------------------------- errors


def parse_instant_input(value: str, *, zone: str, field: str) -> dt.datetime:
    """A time typed by a client: ISO with an offset, or a wall time in ``zone``.

    A wall time in a DST gap or fold is refused naming both offsets (tz.parse_wall_time).
    """
    try:
        return tz.parse_wall_time(value, zone, field=field)
    except DomainError as exc:
        exc.extra = {**exc.extra, "field": field}
        raise


class StrictBooleanField(forms.Field):
    """true/false (1/0, yes/no); anything else is a 400 instead of being ignored."""

    TRUE, FALSE = {"true", "1", "yes"}, {"false", "0", "no"}

    def to_python(self, value):
        if value in (None, ""):
            return None
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in self.TRUE:
            return True
        if text in self.FALSE:
            return False
        raise forms.ValidationError("Use true or false.", code="invalid")


class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField
