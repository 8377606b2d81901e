"""What a kep.yaml says (status, stage, milestones, path, its people), and owner handles
unique in any case: rows of one KEP whose handles differ only in case or a leading "@"
("@Alice", "alice") are merged first into the oldest, which takes the email, Slack id
and user it lacks from the others."""

import django.db.models.deletion
import django.db.models.functions.text
from django.conf import settings
from django.db import migrations, models


def merge_owners_differing_in_case(apps, schema_editor):
    Owner = apps.get_model("releasecal", "EnhancementOwner")
    kept: dict[tuple[int, str], object] = {}
    for owner in Owner.objects.exclude(github="").order_by("enhancement_id", "pk"):
        handle = owner.github.strip().lstrip("@").strip()
        key = (owner.enhancement_id, handle.lower())
        first = kept.get(key)
        if first is None:
            kept[key] = owner
            if handle != owner.github:
                owner.github = handle
                owner.save(update_fields=["github"])
            continue
        changed = []
        for field in ("email", "slack_id", "user_id"):
            if not getattr(first, field) and getattr(owner, field):
                setattr(first, field, getattr(owner, field))
                changed.append(field)
        if changed:
            first.save(update_fields=changed)
        owner.delete()


class Migration(migrations.Migration):
    dependencies = [
        ("releasecal", "0009_milestone_week"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="EnhancementPerson",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "github",
                    models.CharField(help_text="GitHub handle, as kep.yaml spells it, without the @", max_length=39),
                ),
                (
                    "role",
                    models.CharField(
                        choices=[
                            ("author", "Author"),
                            ("approver", "Approver"),
                            ("reviewer", "Reviewer"),
                            ("prr_approver", "PRR approver"),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "stage",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("alpha", "Alpha"),
                            ("beta", "Beta"),
                            ("stable", "Stable"),
                            ("deprecated", "Deprecated"),
                            ("disabled", "Disabled"),
                            ("removed", "Removed"),
                        ],
                        help_text="For a PRR approver: the stage approved",
                        max_length=16,
                    ),
                ),
                ("position", models.PositiveSmallIntegerField(default=0, help_text="Order in the kep.yaml list")),
            ],
            options={
                "ordering": ["enhancement", "role", "stage", "position"],
            },
        ),
        migrations.RemoveConstraint(
            model_name="enhancementowner",
            name="one_owner_row_per_github",
        ),
        migrations.RunPython(merge_owners_differing_in_case, migrations.RunPython.noop),
        migrations.AddField(
            model_name="enhancement",
            name="kep_path",
            field=models.CharField(
                blank=True,
                help_text="Where its kep.yaml is under keps/: sig-node/2400-node-swap/kep.yaml",
                max_length=300,
            ),
        ),
        migrations.AddField(
            model_name="enhancement",
            name="kep_stage",
            field=models.CharField(
                blank=True,
                choices=[
                    ("alpha", "Alpha"),
                    ("beta", "Beta"),
                    ("stable", "Stable"),
                    ("deprecated", "Deprecated"),
                    ("disabled", "Disabled"),
                    ("removed", "Removed"),
                ],
                help_text="The kep.yaml stage: the one it works toward",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="enhancement",
            name="kep_status",
            field=models.CharField(
                blank=True,
                choices=[
                    ("provisional", "Provisional"),
                    ("implementable", "Implementable"),
                    ("implemented", "Implemented"),
                    ("deferred", "Deferred"),
                    ("rejected", "Rejected"),
                    ("withdrawn", "Withdrawn"),
                    ("replaced", "Replaced"),
                ],
                help_text="The kep.yaml status (empty: not recorded)",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="enhancement",
            name="latest_milestone",
            field=models.CharField(
                blank=True, help_text="The kep.yaml latest-milestone, as a release slug (1.34)", max_length=32
            ),
        ),
        migrations.AddField(
            model_name="enhancement",
            name="stage_milestones",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text='The kep.yaml milestone per stage: {"alpha": "1.31", "beta": "1.32"}',
            ),
        ),
        migrations.AddField(
            model_name="enhancementperson",
            name="enhancement",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="people", to="releasecal.enhancement"
            ),
        ),
        migrations.AddIndex(
            model_name="enhancementperson",
            index=models.Index(django.db.models.functions.text.Lower("github"), name="person_github_any_case"),
        ),
        migrations.AddConstraint(
            model_name="enhancementperson",
            constraint=models.UniqueConstraint(
                models.F("enhancement"),
                models.F("role"),
                models.F("stage"),
                django.db.models.functions.text.Lower("github"),
                name="one_person_row_per_role_any_case",
            ),
        ),
        migrations.AddConstraint(
            model_name="enhancementperson",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("role", "prr_approver"), ("stage__gt", "")),
                    models.Q(models.Q(("role", "prr_approver"), _negated=True), ("stage", "")),
                    _connector="OR",
                ),
                name="person_stage_only_for_prr_approvers",
            ),
        ),
    ]
