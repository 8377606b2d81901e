"""Paging for list endpoints."""

from __future__ import annotations

from rest_framework import exceptions as drf_exceptions
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request


class Pagination(LimitOffsetPagination):
    """limit/offset paging that refuses nonsense instead of ignoring or overflowing it."""

    default_limit = 50
    max_limit = 1000
    max_offset = 10**9

    def _read(self, request: Request, name: str, default: int | None, maximum: int) -> int | None:
        raw = request.query_params.get(name)
        if raw is None or raw == "":
            return default
        if not raw.isascii() or not raw.isdigit() or int(raw) > maximum:
            raise drf_exceptions.ValidationError({name: [f"Use a whole number from 0 to {maximum}."]})
        return int(raw)

    def get_limit(self, request: Request) -> int | None:
        limit = self._read(request, self.limit_query_param, self.default_limit, 10**9)
        return min(max(limit, 1), self.max_limit) if limit is not None else None

    def get_offset(self, request: Request) -> int:
        return self._read(request, self.offset_query_param, 0, self.max_offset)
