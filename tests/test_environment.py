"""The pip and conda descriptions of the course environment declare the same pins."""

import tomllib

import yaml

from grader.course import REPO_ROOT


def _pyproject_pins() -> set[str]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    return set(project["dependencies"]) | set(project["optional-dependencies"]["dev"])


def _conda_pins() -> set[str]:
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    return {line for line in pip_section if not line.startswith("-")}


def test_environment_yml_declares_the_pyproject_pins():
    """environment.yml and pyproject.toml pin exactly the same packages and versions."""
    assert _conda_pins() == _pyproject_pins()


def test_every_dependency_is_pinned_exactly():
    """Printed outputs depend on versions, so every dependency is pinned with ==."""
    loose = [pin for pin in _pyproject_pins() if "==" not in pin]
    assert loose == []


def test_torch_is_the_version_the_outputs_were_made_with():
    """The stored lesson outputs were produced with torch 2.13.0."""
    assert "torch==2.13.0" in _pyproject_pins()


def test_environment_yml_uses_python_311():
    """conda builds the same Python the Makefile asks for."""
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]
