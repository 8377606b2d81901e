"""Create the groups "Release Team" and "Enhancements" and the default milestone kinds."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

from releasecal.kinds import DEFAULT_KINDS

RELEASE_TEAM = "Release Team"
ENHANCEMENTS = "Enhancements"

RELEASE_TEAM_PERMS = [
    ("exceptions", "decide_exceptionrequest"),
    ("exceptions", "view_exceptionrequest"),
    ("exceptions", "change_exceptionrequest"),
    ("exceptions", "add_exceptionrequest"),
    ("exceptions", "view_decision"),
    ("exceptions", "view_signoff"),
    ("exceptions", "add_signoff"),
    ("releasecal", "view_release"),
    ("releasecal", "change_release"),
    ("releasecal", "view_milestone"),
    ("releasecal", "add_milestone"),
    ("releasecal", "change_milestone"),
    ("releasecal", "view_enhancement"),
    ("releasecal", "change_enhancement"),
    ("releasecal", "view_tracking"),
    ("releasecal", "change_tracking"),
    ("releasecal", "view_auditlog"),
]
ENHANCEMENTS_PERMS = [
    ("exceptions", "view_exceptionrequest"),
    ("exceptions", "add_exceptionrequest"),
    ("exceptions", "view_signoff"),
    ("exceptions", "add_signoff"),
    ("releasecal", "view_release"),
    ("releasecal", "view_milestone"),
    ("releasecal", "view_enhancement"),
    ("releasecal", "add_enhancement"),
    ("releasecal", "change_enhancement"),
    ("releasecal", "view_tracking"),
    ("releasecal", "add_tracking"),
    ("releasecal", "change_tracking"),
    ("releasecal", "view_auditlog"),
]


def forwards(apps, schema_editor):
    for label in ("releasecal", "exceptions"):
        app_config = apps.get_app_config(label)
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, perms in ((RELEASE_TEAM, RELEASE_TEAM_PERMS), (ENHANCEMENTS, ENHANCEMENTS_PERMS)):
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
