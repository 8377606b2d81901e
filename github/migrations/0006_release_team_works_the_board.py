"""The Release Team group does what the cockpit offers it on the board and the KEP
issues: the comments to post by hand (see, mark posted, run the sweeps), the conflicts
between the board and releasecal (see, resolve), and the board writes (see, retry). The
Enhancements Lead is a member of the release team, not an admin; before this only
superusers could open these pages."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

# Spelled out (not imported) so this migration keeps doing what it did when written.
GRANTS = {
    "Release Team": [
        ("github_board", "view_issuecomment"),
        ("github_board", "change_issuecomment"),
        ("github_board", "view_boardconflict"),
        ("github_board", "change_boardconflict"),
        ("github_board", "view_boardwrite"),
        ("github_board", "change_boardwrite"),
    ]
}


def forwards(apps, schema_editor):
    app_config = apps.get_app_config("github_board")
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
        ("github_board", "0005_issue_comments"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(forwards, backwards)]
