"""Print the Slack app manifest of this deployment (URLs from SITE_URL)."""

from __future__ import annotations

import json

import yaml
from django.core.management.base import BaseCommand, CommandError

from slack_integration.manifest import ManifestError, build_manifest


class Command(BaseCommand):
    help = (
        "Print the Slack app manifest for this deployment (every URL from SITE_URL). "
        "Paste it into Slack: Create New App -> From an app manifest."
    )

    def add_arguments(self, parser):
        fmt = parser.add_mutually_exclusive_group()
        fmt.add_argument("--json", dest="format", action="store_const", const="json", help="JSON (the default)")
        fmt.add_argument("--yaml", dest="format", action="store_const", const="yaml", help="YAML")
        parser.add_argument("--site-url", help="the public https base URL (default: SITE_URL)")

    def handle(self, *args, **options):
        try:
            manifest = build_manifest(options.get("site_url"))
        except ManifestError as exc:
            raise CommandError(str(exc)) from None
        if options.get("format") == "yaml":
            self.stdout.write(yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True), ending="")
        else:
            self.stdout.write(json.dumps(manifest, indent=2, ensure_ascii=False))
