"""Running the interop Node scripts: each takes its settings as one JSON argument and prints one JSON
report as the last line of stdout (see ``report.mjs``); progress goes to stderr."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

INTEROP_DIR = Path(__file__).resolve().parent


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: the interop tests need Node 20 or newer")
    return node


def _check_installed() -> None:
    manifest = json.loads((INTEROP_DIR / "package.json").read_text())
    missing = [
        name
        for name in manifest["dependencies"]
        if not (INTEROP_DIR / "node_modules" / name / "package.json").exists()
    ]
    if missing:
        pytest.fail(
            f"npm packages {missing} are not installed: run `make pytest` "
            "(or `cd tests/interop && npm ci`)"
        )


@dataclass
class NodeRun:
    script: str
    returncode: int
    stdout: str
    stderr: str

    @property
    def report(self) -> dict[str, Any] | None:
        lines = self.stdout.strip().splitlines()
        if not lines:
            return None
        try:
            report: dict[str, Any] = json.loads(lines[-1])
        except json.JSONDecodeError:
            return None
        return report

    @property
    def ok(self) -> bool:
        report = self.report
        return self.returncode == 0 and report is not None and report.get("ok") is True

    def explain(self) -> str:
        """What went wrong, for an assertion message: the mismatches first, then the output."""
        report = self.report
        parts = [f"node {self.script} exited with {self.returncode}"]
        if report is None:
            parts.append(f"no report on stdout:\n{self.stdout[-4000:]}")
        else:
            parts.append("mismatches:\n  " + "\n  ".join(report.get("failures", [])))
        parts.append(f"stderr:\n{self.stderr[-4000:]}")
        return "\n".join(parts)


async def run_node_script(script: str, settings: dict[str, Any]) -> NodeRun:
    """Run ``node <script> <settings as JSON>`` in tests/interop and collect its report.

    The caller owns the deadline (``trio.fail_after``); when it cuts the script short, the output
    so far goes to stderr, which pytest shows with the failure.
    """
    _check_installed()
    command = [_node(), script, json.dumps(settings)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:

        def output() -> tuple[str, str]:
            out.seek(0)
            err.seek(0)
            return out.read().decode(), err.read().decode()

        try:
            process = await trio.run_process(
                command, cwd=INTEROP_DIR, stdout=out, stderr=err, check=False
            )
        except BaseException:
            stdout, stderr = output()
            sys.stderr.write(
                f"node {script} did not finish; its output so far:\n"
                f"--- stdout\n{stdout}\n--- stderr\n{stderr}\n"
            )
            raise
        return NodeRun(script, process.returncode, *output())
