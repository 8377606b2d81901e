"""docs/operations.md names what exists: the objects the overlays make, the management
commands, the metrics /metrics serves, the Secret's keys."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import get_commands

from tests.deploy.manifests import SECRET_NAME, render, workloads
from tests.support.paths import ROOT

PAGE = (ROOT / "docs" / "operations.md").read_text()
DASHBOARD = ROOT / "deploy" / "grafana" / "releasecal-dashboard.json"


def test_every_object_the_page_names_is_one_the_overlays_make():
    docs = render("production")
    names = {f"{doc['kind'].lower()}/{doc['metadata']['name']}" for doc in docs}
    named = set(re.findall(r"\b((?:deployment|job|deploy)/releasecal-[a-z-]+)", PAGE))
    assert named
    for name in named:
        kind, _, rest = name.partition("/")
        if rest == "releasecal-tzdata-check":  # the page's own example Job
            continue
        assert f"{'deployment' if kind == 'deploy' else kind}/{rest}" in names, name
    containers = {c["name"] for w in workloads(docs) for c in w["spec"]["template"]["spec"]["containers"]}
    for container in re.findall(r"deploy/releasecal-[a-z]+ -c ([a-z]+)", PAGE):
        assert container in containers, container
    assert f"create secret generic {SECRET_NAME} --from-env-file=secrets.env" in PAGE


def test_every_management_command_the_page_runs_exists():
    commands = set(re.findall(r"manage\.py ([a-z_]+)", PAGE))
    assert {"setup_defaults", "createsuperuser", "tzdata_check", "import_schedule", "feeds_bump"} <= commands
    assert commands <= set(get_commands()), commands - set(get_commands())


def _served() -> set[str]:
    """The metric names /metrics serves (a counter's family is named without _total)."""
    from prometheus_client import REGISTRY

    import feeds.metrics  # noqa: F401 - its counters, registered when imported
    from config.metrics import DatabaseCollector

    families = {metric.name for metric in REGISTRY.collect()} | {
        family.name for family in DatabaseCollector().collect()
    }
    return (
        families
        | {f"{name}_total" for name in families}
        | {f"{name}_bucket" for name in families}
        | {f"{name}_count" for name in families}
    )


@pytest.mark.django_db
def test_every_metric_the_page_explains_is_one_the_app_serves():
    explained = set(re.findall(r"`(releasecal_[a-z_]+)`", PAGE))
    assert len(explained) >= 10
    assert explained <= _served(), explained - _served()
    alerted = set(re.findall(r"\b(releasecal_[a-z_]+)\b", PAGE.split("What to alert on")[1]))
    assert alerted <= _served(), alerted - _served()


@pytest.mark.django_db
def test_the_grafana_dashboard_queries_only_metrics_the_app_serves():
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    queried = {name for expr in exprs for name in re.findall(r"\b(releasecal_[a-z_]+)\b", expr)}
    assert len(queried) >= 10
    assert queried <= _served(), queried - _served()
    assert len({panel["id"] for panel in dashboard["panels"]}) == len(dashboard["panels"])
