from django.contrib import admin
from django.urls import include, path

from config.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("calendar/", include("feeds.urls")),
    path("api/", include("api.urls")),
    path("slack/", include("slack_integration.urls")),
    path("", include("pages.urls")),
]
