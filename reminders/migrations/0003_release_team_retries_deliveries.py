"""The Release Team group reads the reminder ledger and may retry a failed delivery (the
cockpit's Retry button): view and change on deliveries, view on channels."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

# Spelled out (not imported) so this migration keeps doing what it did when written.
GRANTS = {
    "Release Team": [
        ("reminders", "view_delivery"),
        ("reminders", "change_delivery"),
        ("reminders", "view_channel"),
    ]
}


def forwards(apps, schema_editor):
    app_config = apps.get_app_config("reminders")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, perms in GRANTS.items():
        group, _ = Group.objects.get_or_create(name=name)
        for app_label, codename in perms:
            group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))


def backwards(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, perms in GRANTS.items():
        for group in Group.objects.filter(name=name):
            for app_label, codename in perms:
                group.permissions.remove(
                    *Permission.objects.filter(content_type__app_label=app_label, codename=codename)
                )


class Migration(migrations.Migration):
    dependencies = [
        ("reminders", "0002_sweep_heartbeat"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(forwards, backwards)]
