"""URL patterns: filled in by the feature that owns them."""

urlpatterns: list = []
