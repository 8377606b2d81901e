"""The Celery app. Broker and settings come from Django settings (CELERY_ namespace)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

app = Celery("releasecal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
