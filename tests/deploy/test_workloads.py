"""What the manifests must get right beyond their schema: exactly one beat, the same
commands as compose (which the image test runs inside the image), the migrate Job before
the web, the image the build makes, the hardening of every pod, the production scaling."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml

from tests.deploy.manifests import (
    KUBERNETES,
    OVERLAYS,
    containers,
    kubectl,
    named,
    pod_spec,
    render,
    workloads,
)
from tests.support.paths import ROOT
from tests.support.processes import fresh_database, load_compose, production_env, run

BUILD_SCRIPT = ROOT / "docker" / "buildah-build.sh"


def _is_beat(command: list[str]) -> bool:
    return command[:1] == ["celery"] and ("beat" in command or "--beat" in command or "-B" in command)


def _workload(docs: list[dict], name: str) -> dict:
    (found,) = [doc for doc in workloads(docs) if doc["metadata"]["name"] == name]
    return found


# ------------------------------------------------------------------------ the one beat


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_exactly_one_beat_runs_and_a_rollout_never_starts_a_second(overlay):
    docs = render(overlay)
    beats = [
        (workload["metadata"]["name"], container["name"])
        for workload in workloads(docs)
        for container in containers(workload)
        if _is_beat(container.get("command", []) + container.get("args", []))
    ]
    assert beats == [("releasecal-beat", "beat")]
    beat = named(docs, "Deployment", "releasecal-beat")
    assert beat["spec"]["replicas"] == 1
    # Recreate: the old pod is gone before the new one starts (RollingUpdate overlaps them).
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    # Nothing scales it.
    scaled = [doc["spec"]["scaleTargetRef"]["name"] for doc in docs if doc["kind"] == "HorizontalPodAutoscaler"]
    assert "releasecal-beat" not in scaled
    # And no worker runs an embedded beat (celery worker --beat / -B).
    worker = named(docs, "Deployment", "releasecal-worker")
    (command,) = [container["command"] for container in containers(worker, init=False)]
    assert "--beat" not in command
    assert "-B" not in command


# ---------------------------------------------------- the commands compose and the image run


def _compose_form(command: list[str]) -> list[str]:
    """A Kubernetes command written as compose writes it ($(VAR) -> ${VAR:-default})."""
    return [part.replace("$(WORKER_CONCURRENCY)", "${WORKER_CONCURRENCY:-4}") for part in command]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_workload_runs_the_command_of_its_compose_service(overlay):
    """tests/config/test_image.py runs compose's commands inside the image: so it runs these."""
    docs = render(overlay)
    services = load_compose()["services"]
    for workload, container, service in (
        ("releasecal-migrate", "migrate", "migrate"),
        ("releasecal-web", "web", "web"),
        ("releasecal-worker", "worker", "worker"),
        ("releasecal-beat", "beat", "beat"),
    ):
        (found,) = [c for c in containers(_workload(docs, workload), init=False) if c["name"] == container]
        assert _compose_form(found["command"]) == services[service]["command"], workload
        assert "args" not in found


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_worker_and_beat_liveness_are_their_compose_health_checks(overlay):
    docs = render(overlay)
    services = load_compose()["services"]
    for name in ("worker", "beat"):
        (container,) = containers(named(docs, "Deployment", f"releasecal-{name}"), init=False)
        probe = container["livenessProbe"]["exec"]["command"]
        test = services[name]["healthcheck"]["test"]
        expected = ["sh", "-c", test[1].replace("$$", "$")] if test[0] == "CMD-SHELL" else test[1:]
        assert probe == expected, name


def test_the_worker_concurrency_comes_from_the_config_map():
    docs = render("production")
    (worker,) = containers(named(docs, "Deployment", "releasecal-worker"), init=False)
    assert worker["command"][-1] == "$(WORKER_CONCURRENCY)"
    (entry,) = [entry for entry in worker["env"] if entry["name"] == "WORKER_CONCURRENCY"]
    ref = entry["valueFrom"]["configMapKeyRef"]
    assert named(docs, "ConfigMap", ref["name"])["data"][ref["key"]] == "4"


# ------------------------------------------------------------ migrations before the web


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_only_the_job_migrates_and_web_worker_and_beat_wait_for_it(overlay):
    docs = render(overlay)
    migrating = [
        workload["metadata"]["name"]
        for workload in workloads(docs)
        for container in containers(workload)
        if "migrate" in " ".join(container["command"]) and "--check" not in " ".join(container["command"])
    ]
    assert migrating == ["releasecal-migrate"]
    job = named(docs, "Job", "releasecal-migrate")
    assert pod_spec(job)["restartPolicy"] == "Never"
    assert job["spec"]["backoffLimit"] >= 1
    for name in ("releasecal-web", "releasecal-worker", "releasecal-beat"):
        (init,) = pod_spec(named(docs, "Deployment", name))["initContainers"]
        script = init["command"][-1]
        assert init["command"][:2] == ["sh", "-c"], name
        # A loop until migrate --check passes: a new pod waits for the Job, never migrates.
        assert re.fullmatch(r"until python manage\.py migrate --check; do .*; sleep \d+; done", script), script
    web = named(docs, "Deployment", "releasecal-web")
    # Old pods keep serving until a new one is ready.
    assert web["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_the_web_init_container_waits_until_the_job_has_migrated(tmp_path):
    """Its script, run as it is against a new database: it waits while migrations are
    unapplied, and ends once the migrate Job's command has run."""
    (init,) = pod_spec(named(render("small"), "Deployment", "releasecal-web"))["initContainers"]
    with fresh_database("releasecal_initwait", sqlite_path=tmp_path / "db.sqlite3") as database:
        env = production_env(DATABASE_URL=database, CONN_MAX_AGE="0")
        waiting = subprocess.Popen(
            init["command"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            # migrate --check prints nothing and exits 1 while a migration is unapplied.
            assert waiting.stdout.readline() == "waiting for the migrate Job\n"
            assert waiting.poll() is None, "the init container ended before anything was migrated"
            (job,) = containers(named(render("small"), "Job", "releasecal-migrate"))
            migrated = run(job["command"], env, timeout=600)
            assert migrated.returncode == 0, migrated.stderr
            assert waiting.wait(timeout=60) == 0
        finally:
            if waiting.poll() is None:
                waiting.kill()
                waiting.wait()
            waiting.stdout.close()


# ----------------------------------------------------------------------------- the image


def _built_tag() -> str:
    """The tag docker/buildah-build.sh gives the image it builds by default."""
    (tag,) = re.findall(r"^TAG=(\S+)$", BUILD_SCRIPT.read_text(), flags=re.MULTILINE)
    return tag


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_container_runs_the_image_the_build_makes(overlay):
    tag = _built_tag()
    assert tag == "releasecal:latest"
    for workload in workloads(render(overlay)):
        for container in containers(workload):
            assert container["image"] == tag, (workload["metadata"]["name"], container["name"])
            # A locally built or loaded image is used as it is.
            assert container["imagePullPolicy"] == "IfNotPresent"


def test_one_images_entry_points_every_container_at_a_registry(tmp_path):
    """What docs/operations.md tells an operator to do for a release."""
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": [os.path.relpath(KUBERNETES / "overlays" / "production", tmp_path)],
                "images": [{"name": "releasecal", "newName": "registry.example.org/releasecal", "newTag": "2026.12.1"}],
            }
        )
    )
    # kustomize refuses a resource outside the kustomization's folder unless told so.
    result = subprocess.run(
        [kubectl(), "kustomize", "--load-restrictor", "LoadRestrictionsNone", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    docs = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    images = {container["image"] for workload in workloads(docs) for container in containers(workload)}
    assert images == {"registry.example.org/releasecal:2026.12.1"}


# ------------------------------------------------------------------------ the hardening


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_pod_runs_hardened_with_a_writable_tmp_only(overlay):
    for workload in workloads(render(overlay)):
        name = workload["metadata"]["name"]
        spec = pod_spec(workload)
        assert spec["automountServiceAccountToken"] is False, name
        assert spec["serviceAccountName"] == "releasecal", name
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["runAsUser"] == 10001, name  # the image's app user
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        volumes = {volume["name"]: volume for volume in spec["volumes"]}
        for container in containers(workload):
            where = (name, container["name"])
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True, where
            assert security["allowPrivilegeEscalation"] is False, where
            assert security["capabilities"] == {"drop": ["ALL"]}, where
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]), where
            assert "memory" in resources["limits"], where
            (tmp,) = [mount for mount in container["volumeMounts"] if mount["mountPath"] == "/tmp"]  # noqa: S108 - the emptyDir
            assert "emptyDir" in volumes[tmp["name"]], where
            writable = [mount for mount in container["volumeMounts"] if not mount.get("readOnly")]
            assert writable == [tmp], where


def test_the_service_account_mounts_no_token():
    account = named(render("small"), "ServiceAccount", "releasecal")
    assert account["automountServiceAccountToken"] is False


def test_the_namespace_enforces_the_restricted_pod_security_standard():
    namespace = named(render("small"), "Namespace", "releasecal")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


# --------------------------------------------------------------------------- the scaling


def test_the_small_overlay_runs_one_web_and_one_worker():
    docs = render("small")
    assert named(docs, "Deployment", "releasecal-web")["spec"]["replicas"] == 1
    assert named(docs, "Deployment", "releasecal-worker")["spec"]["replicas"] == 1
    assert not [doc for doc in docs if doc["kind"] in ("HorizontalPodAutoscaler", "PodDisruptionBudget")]


def _selects(selector: dict, workload: dict) -> bool:
    labels = workload["spec"]["template"]["metadata"]["labels"]
    return selector["matchLabels"].items() <= labels.items()


def test_production_autoscales_the_web_keeps_it_through_drains_and_scales_workers_apart():
    docs = render("production")
    web = named(docs, "Deployment", "releasecal-web")
    worker = named(docs, "Deployment", "releasecal-worker")
    beat = named(docs, "Deployment", "releasecal-beat")
    autoscaler = named(docs, "HorizontalPodAutoscaler", "releasecal-web")
    assert autoscaler["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": web["metadata"]["name"],
    }
    assert autoscaler["spec"]["minReplicas"] >= 2
    # The autoscaler owns the count: an apply must not reset it.
    assert "replicas" not in web["spec"]
    budgets = {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == "PodDisruptionBudget"}
    assert _selects(budgets["releasecal-web"]["spec"]["selector"], web)
    assert not _selects(budgets["releasecal-web"]["spec"]["selector"], worker)
    assert budgets["releasecal-web"]["spec"]["minAvailable"] < autoscaler["spec"]["minReplicas"]
    assert _selects(budgets["releasecal-worker"]["spec"]["selector"], worker)
    assert worker["spec"]["replicas"] == 3
    assert not any(_selects(budget["spec"]["selector"], beat) for budget in budgets.values())


def test_production_spreads_web_and_worker_pods_over_the_nodes():
    docs = render("production")
    for name in ("releasecal-web", "releasecal-worker"):
        workload = named(docs, "Deployment", name)
        (spread,) = pod_spec(workload)["topologySpreadConstraints"]
        assert spread["topologyKey"] == "kubernetes.io/hostname"
        assert _selects(spread["labelSelector"], workload)
        others = [w for w in workloads(docs) if w["metadata"]["name"] != name]
        assert not any(_selects(spread["labelSelector"], other) for other in others), name
