"""Every manifest the overlays render is valid against Kubernetes 1.37's schemas
(kubernetes-validate, strict: an unknown field is an error, as the API server's
field validation makes it)."""

from __future__ import annotations

import kubernetes_validate
import pytest

from tests.deploy.manifests import KUBERNETES, KUBERNETES_VERSION, OVERLAYS, named, render


def test_the_validator_ships_the_schemas_of_the_version_checked():
    assert kubernetes_validate.latest_version().startswith(f"{KUBERNETES_VERSION}.")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_rendered_manifest_is_valid_kubernetes(overlay):
    docs = render(overlay)
    assert len(docs) > 10
    for doc in docs:
        checked = kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        assert checked == KUBERNETES_VERSION, (doc["kind"], doc["metadata"]["name"], checked)


def test_the_base_renders_valid_kubernetes_too():
    for doc in render(KUBERNETES / "base"):
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_the_validation_refuses_a_misspelt_field_and_a_wrong_type():
    web = named(render("small"), "Deployment", "releasecal-web")
    misspelt = render("small")
    named(misspelt, "Deployment", "releasecal-web")["spec"]["template"]["spec"]["containers"][0]["readinessProbes"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(named(misspelt, "Deployment", "releasecal-web"), KUBERNETES_VERSION, strict=True)
    web["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(web, KUBERNETES_VERSION, strict=True)
