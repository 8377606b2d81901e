"""The Celery app. Broker and settings come from Django settings (CELERY_ namespace)."""

from celery import Celery

from config import env

env.use_settings_module()

app = Celery("releasecal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
