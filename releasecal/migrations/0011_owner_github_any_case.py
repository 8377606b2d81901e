"""Owner handles unique in any case (after 0010 merged the rows that differ only in
case): its own migration, since PostgreSQL creates no index in a transaction that still
has trigger events pending from 0010's merge."""

import django.db.models.functions.text
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("releasecal", "0010_kep_record"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="enhancementowner",
            index=models.Index(django.db.models.functions.text.Lower("github"), name="owner_github_any_case"),
        ),
        migrations.AddConstraint(
            model_name="enhancementowner",
            constraint=models.UniqueConstraint(
                models.F("enhancement"),
                django.db.models.functions.text.Lower("github"),
                condition=models.Q(("github", ""), _negated=True),
                name="one_owner_row_per_github_any_case",
            ),
        ),
    ]
