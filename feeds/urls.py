"""/calendar/: the iCal feeds (feeds.views)."""

from django.urls import path, re_path

from feeds import views as feeds

app_name = "feeds"

urlpatterns = [
    path("all.ics", feeds.all_feed, name="all"),
    path("kep/<int:number>.ics", feeds.kep_feed, name="kep"),
    re_path(r"^u/(?P<token>[-\w]{1,128})\.ics$", feeds.personal_feed, name="personal"),
    re_path(r"^(?P<release>[-\w.]+)/sig/(?P<sig>[-\w]+)\.ics$", feeds.sig_feed, name="sig"),
    re_path(r"^(?P<release>[-\w.]+)\.ics$", feeds.release_feed, name="release"),
]
