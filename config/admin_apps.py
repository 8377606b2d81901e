"""django.contrib.admin with our default site (the release team's cockpit). Kept apart
from the site itself: INSTALLED_APPS imports this before any model is loaded."""

from django.contrib.admin.apps import AdminConfig as DjangoAdminConfig


class AdminConfig(DjangoAdminConfig):
    default_site = "config.admin_site.ReleasecalAdminSite"
