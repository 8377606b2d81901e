"""Ordering: DRF's ``OrderingFilter`` drops unknown ``ordering=`` terms silently, so a typo
gives an unsorted (default) list that looks right. Here an unknown term is a 400 naming
the accepted ones, like any other bad filter."""

from __future__ import annotations

from rest_framework import filters

from releasecal.errors import ValidationFailed


class OrderingFilter(filters.OrderingFilter):
    def remove_invalid_fields(self, queryset, fields, view, request):
        valid = super().remove_invalid_fields(queryset, fields, view, request)
        unknown = [term for term in fields if term and term not in valid]
        if unknown or not valid:
            accepted = [item[0] for item in self.get_valid_fields(queryset, view, {"request": request})]
            raise ValidationFailed(
                f"Unknown ordering {', '.join(repr(t[:40]) for t in unknown[:3]) or repr('')}; "
                f"use {', '.join(accepted)} (prefix '-' for descending).",
                extra={"ordering": accepted},
            )
        return valid
