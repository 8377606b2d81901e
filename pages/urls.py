"""Public schedule pages."""

from django.urls import path

from pages import views

app_name = "pages"

urlpatterns = [
    path("", views.home, name="home"),
    path("releases/<str:slug>/", views.release_detail, name="release"),
    path("releases/<str:slug>/exceptions/", views.release_exceptions, name="exceptions"),
    path("kep/<int:number>/", views.kep_detail, name="kep"),
    path("kep/<int:number>/requests/", views.kep_request_file, name="kep-request-file"),
    path("kep/<int:number>/requests/<int:request_id>/amend/", views.kep_request_amend, name="kep-request-amend"),
    path("me/feed/", views.my_feed, name="my-feed"),
]
