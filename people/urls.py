"""/login/, /logout/, /me/ (My KEPs)."""

from django.urls import path

from people import views

app_name = "people"

urlpatterns = [
    path("login/", views.login, name="login"),
    path("logout/", views.logout, name="logout"),
    path("me/", views.me, name="me"),
]
