"""The web's probes point at the app's real probe endpoints and are answered for the
Host a kubelet sends (the pod's IP) while the site still refuses that Host; the Service
and Ingress reach the container's port; the NetworkPolicies let the ingress controller
in and nothing else, and let out only what the app talks to."""

from __future__ import annotations

import pytest
from django.test import override_settings

from config.middleware import ProbeMiddleware
from tests.deploy.manifests import OVERLAYS, config_map, container_environment, containers, named, render, workloads

POD_IP_HOST = "10.244.3.17:8000"  # a kubelet's httpGet sends the pod's IP and port as Host


def _web(docs):
    web = named(docs, "Deployment", "releasecal-web")
    (container,) = [container for container in containers(web, init=False) if container["name"] == "web"]
    return web, container


def _probe_paths(container) -> dict[str, str]:
    return {kind: container[kind]["httpGet"]["path"] for kind in ("startupProbe", "livenessProbe", "readinessProbe")}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_liveness_asks_only_the_process_and_readiness_its_dependencies(overlay):
    _, container = _web(render(overlay))
    answered = ProbeMiddleware(lambda request: None).views
    paths = _probe_paths(container)
    assert paths == {"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"}
    assert set(paths.values()) <= set(answered)
    assert answered["/healthz"].__name__ == "healthz"
    assert answered["/readyz"].__name__ == "readyz"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_probes_and_services_use_the_port_gunicorn_binds(overlay):
    docs = render(overlay)
    _, container = _web(docs)
    (port,) = container["ports"]
    bind = container_environment(docs, container)["GUNICORN_BIND"]
    assert bind.rpartition(":")[2] == str(port["containerPort"])
    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[kind]["httpGet"]["port"] == port["name"]
    service = named(docs, "Service", "releasecal-web")
    (service_port,) = service["spec"]["ports"]
    assert service_port["targetPort"] == port["name"]
    web = named(docs, "Deployment", "releasecal-web")
    assert service["spec"]["selector"].items() <= web["spec"]["template"]["metadata"]["labels"].items()
    ingress = named(docs, "Ingress", "releasecal")
    backends = [path["backend"]["service"] for rule in ingress["spec"]["rules"] for path in rule["http"]["paths"]]
    assert backends == [{"name": "releasecal-web", "port": {"name": service_port["name"]}}]


@pytest.mark.django_db
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_probes_answer_the_kubelets_host_which_the_site_refuses(overlay, client):
    docs = render(overlay)
    _, container = _web(docs)
    allowed = container_environment(docs, container)["ALLOWED_HOSTS"].split(",")
    assert "*" not in allowed
    with override_settings(ALLOWED_HOSTS=allowed):
        for kind, path in _probe_paths(container).items():
            response = client.get(path, HTTP_HOST=POD_IP_HOST)
            assert response.status_code == 200, (kind, path, response.content)
            assert response.json()["status"] == "ok"
        assert client.get("/", HTTP_HOST=POD_IP_HOST).status_code == 400
        assert client.get("/api/v1/releases/", HTTP_HOST=POD_IP_HOST).status_code == 400


# ------------------------------------------------------------------------ NetworkPolicies


def _policies(docs, pod_labels: dict[str, str], kind: str) -> list[dict]:
    return [
        doc
        for doc in docs
        if doc["kind"] == "NetworkPolicy"
        and kind in doc["spec"]["policyTypes"]
        and doc["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    ]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_pod_denies_by_default_and_only_the_web_takes_traffic_from_the_ingress_controller(overlay):
    docs = render(overlay)
    for workload in workloads(docs):
        labels = workload["spec"]["template"]["metadata"]["labels"]
        name = workload["metadata"]["name"]
        ingress = _policies(docs, labels, "Ingress")
        assert "releasecal-default-deny" in [policy["metadata"]["name"] for policy in ingress], name
        assert "releasecal-default-deny" in [policy["metadata"]["name"] for policy in _policies(docs, labels, "Egress")]
        rules = [rule for policy in ingress for rule in policy["spec"].get("ingress", [])]
        if name != "releasecal-web":
            assert rules == [], name
            continue
        peers = [peer for rule in rules for peer in rule["from"]]
        assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}},
                "podSelector": {"matchLabels": {"app.kubernetes.io/name": "ingress-nginx"}}} in peers  # fmt: skip
        for peer in peers:
            # Pods of another namespace, named by their own labels (kustomize's labels
            # must not have been written into them), never any address.
            assert set(peer) == {"namespaceSelector", "podSelector"}, peer
            assert peer["podSelector"]["matchLabels"].get("app.kubernetes.io/name") != "releasecal", peer
        assert {port["port"] for rule in rules for port in rule["ports"]} == {8000}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_pods_reach_only_dns_postgresql_redis_mail_slack_and_github(overlay):
    docs = render(overlay)
    web = named(docs, "Deployment", "releasecal-web")
    rules = [
        rule for policy in _policies(docs, web["spec"]["template"]["metadata"]["labels"], "Egress")
        for rule in policy["spec"].get("egress", [])
    ]  # fmt: skip
    ports = {(port["protocol"], port["port"]) for rule in rules for port in rule["ports"]}
    assert ports == {
        ("UDP", 53), ("TCP", 53),  # DNS
        ("TCP", 5432),  # PostgreSQL
        ("TCP", 6379),  # Redis
        ("TCP", 587), ("TCP", 465), ("TCP", 25),  # SMTP
        ("TCP", 993), ("TCP", 143),  # IMAP
        ("TCP", 443),  # Slack, GitHub
    }  # fmt: skip
    assert all(rule["ports"] for rule in rules), "every egress rule names its ports"
    (https,) = [rule for rule in rules if rule["ports"] == [{"protocol": "TCP", "port": 443}]]
    for block in https["to"]:
        assert block["ipBlock"]["except"], "HTTPS to the internet, not into the cluster's private ranges"


def test_the_config_map_is_rendered_with_a_content_hash_so_a_change_rolls_the_pods():
    docs = render("small")
    _, container = _web(docs)
    name = container["envFrom"][0]["configMapRef"]["name"]
    assert name.startswith("releasecal-config-")
    assert config_map(docs, name)["data"]["WEB_CONCURRENCY"] == "2"
