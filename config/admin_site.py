"""The admin site: the release team lands on the cockpit, everyone else on the usual index.

Installed with ``config.admin_apps.AdminConfig`` in place of ``django.contrib.admin``
(Django's documented way to use a custom default admin site).
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import admin
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse

from config.cockpit import cockpit
from exceptions.services import DECIDE_PERMISSION


def is_release_team(user) -> bool:
    return bool(user.is_active and user.is_staff and user.has_perm(DECIDE_PERMISSION))


def _liaison(request) -> int | None:
    """The cockpit's ``?liaison=``: ``me`` or a user's id (anything else: everyone's)."""
    value = request.GET.get("liaison", "")
    if value == "me":
        return request.user.pk
    return int(value) if value.isdigit() and len(value) < 10 else None


class ReleasecalAdminSite(admin.AdminSite):
    site_header = "releasecal"
    site_title = "releasecal admin"
    index_title = "Release calendar"

    def login(self, request, extra_context=None):
        """The one login page (people/) instead of the admin's own: a GET goes there,
        ``next`` kept (the admin by default); a POST still signs in here as before."""
        if request.method == "GET" and not request.user.is_authenticated:
            next_url = request.GET.get("next") or request.path.replace("login/", "")
            return HttpResponseRedirect(f"{settings.LOGIN_URL}?{urlencode({'next': next_url})}")
        return super().login(request, extra_context)

    def index(self, request, extra_context=None):
        if not is_release_team(request.user) or request.GET.get("apps") == "1":
            return super().index(request, extra_context)
        context = {
            **self.each_context(request),
            "title": "What needs the release team now",
            "app_list": self.get_app_list(request),
            **cockpit(liaison=_liaison(request)),
            **(extra_context or {}),
        }
        request.current_app = self.name
        return TemplateResponse(request, "admin/cockpit.html", context)
