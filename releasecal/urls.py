from django.contrib import admin
from django.urls import include, path

from releasecal.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("calendar/", include("releasecal.feed_urls")),
    path("api/", include("releasecal.api_urls")),
    path("slack/", include("releasecal.slack_urls")),
    path("", include("releasecal.page_urls")),
]
