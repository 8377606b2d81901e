"""Create the groups "Release Team" and "Enhancements" and the default milestone kinds."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

from releasecal.defaults import DEFAULT_KINDS, ENHANCEMENTS, GROUP_PERMISSIONS, RELEASE_TEAM


def forwards(apps, schema_editor):
    for label in ("releasecal", "exceptions"):
        app_config = apps.get_app_config(label)
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, perms in GROUP_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=name)
        for app_label, codename in perms:
            group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    MilestoneKind = apps.get_model("releasecal", "MilestoneKind")
    for slug, name, allows, is_freeze, ordering in DEFAULT_KINDS:
        MilestoneKind.objects.get_or_create(
            slug=slug,
            defaults={"name": name, "allows_exceptions": allows, "is_freeze": is_freeze, "ordering": ordering},
        )


def backwards(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=[RELEASE_TEAM, ENHANCEMENTS]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("exceptions", "0001_initial"),
        ("releasecal", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(forwards, backwards)]
