"""One JSON contract: every --json output, success or error, matches docs/json-schema.json."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from helpers import Project, git, make_project
from rebase_helpers import moving_project, resolve_p1
from series.cli import main
from series.errors import Exit
from tinytests import make_tiny_project

SCHEMA = json.loads((Path(__file__).parents[1] / "docs/json-schema.json").read_text())
Draft202012Validator.check_schema(SCHEMA)
VALIDATOR = Draft202012Validator(SCHEMA)


def errors(schema: dict[str, Any], value: Any) -> list[str]:
    """Every way ``value`` breaks ``schema`` (empty when it is valid), where and why."""
    validator = VALIDATOR if schema is SCHEMA else Draft202012Validator(schema)
    found = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    return [f"{e.json_path}: {e.message}" for e in found]


def envelope(project: Project, *args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = project.run(*args, "--json")
    assert out.strip(), (args, code, err)
    data = json.loads(out)  # exactly one JSON document, whatever happened
    problems = errors(SCHEMA, data)
    assert not problems, "\n".join(problems) + "\n" + err
    assert data["exit_code"] == code and data["ok"] == (code == 0)
    assert data["command"] == args[0] and data["format"] == 1
    return code, data


def test_every_command_prints_the_envelope_on_success(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    for args in (
        ("list",),
        ("show", "P2"),
        ("check-conflicts",),
        ("apply",),
        ("export",),
    ):
        code, data = envelope(project, *args)
        assert code == 0 and data["error"] is None, data
    # the small project's messages name no upstream PR: lint finds that, in the envelope
    code, data = envelope(project, "lint")
    assert code == Exit.FAILED and data["error"] is None
    assert all(p["message"] for p in data["patches"]), data["patches"]
    _, data = envelope(project, "apply")
    assert data["up_to_date"] is True and data["applied"] == ["P1", "P2", "P3"]
    for args in (("status",), ("branches", "--dry-run")):
        code, data = envelope(project, *args)
        assert code == 0 and data["error"] is None, data
    # refusals are envelopes too: no rebase in progress; no earlier version to compare with
    for args in (("rebase", "--abort"), ("range-diff",)):
        code, data = envelope(project, *args)
        assert code != 0 and data["error"]["message"] and data["error"]["hint"], data


def test_series_test_json_matches_the_schema(tmp_path: Path) -> None:
    project = make_tiny_project(tmp_path)
    code, data = envelope(project, "test", "P1")
    assert code == 0 and data["patches"][0]["status"] == "ok"


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (("show", "P9"), Exit.BAD_INPUT, "no patch 'P9'"),
        (("check-conflicts", "--upstream", "x"), Exit.BAD_INPUT, "no --onto"),
        (("export",), Exit.FAILED, "not a series checkout"),
        (("test", "--jobs", "0"), Exit.BAD_INPUT, "at least one"),
    ],
)
def test_errors_print_the_envelope_with_message_why_hint(
    tmp_path: Path, args: tuple[str, ...], code: int, words: str
) -> None:
    project = make_project(tmp_path)
    got, data = envelope(project, *args)
    assert got == code
    assert words in data["error"]["message"] and data["error"]["hint"]


def test_manifest_error_and_refusal_print_the_envelope(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert project.run("apply")[0] == 0
    (project.work / "pkg/core.py").write_text("dirty\n")
    code, data = envelope(project, "apply")
    assert code == Exit.REFUSED and "uncommitted changes" in data["error"]["message"]
    git(project.work, "checkout", "--", ".")
    path = project.root / "series.toml"
    path.write_text(path.read_text().replace("format = 1", "format = true"))
    for command in ("list", "apply", "lint"):
        code, data = envelope(project, command)
        assert code == Exit.BAD_INPUT and "format" in data["error"]["message"]


def test_a_conflict_is_a_payload_with_exit_3_not_an_error(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    patch = project.root / "patches/perf-P2.patch"
    patch.write_text(patch.read_text().replace("VALUE_5 = 5", "VALUE_5 = 7"))
    code, data = envelope(project, "check-conflicts", "--no-matrix")
    assert code == Exit.CONFLICT and data["error"] is None and data["problems"]
    code, data = envelope(project, "apply")
    assert code == Exit.CONFLICT and "does not apply" in data["error"]["message"]


def test_the_validator_catches_a_broken_envelope() -> None:
    good = {"format": 1, "command": "list", "ok": True, "exit_code": 0, "error": None}
    assert errors(SCHEMA, good) == ["$: 'patches' is a required property"]
    assert errors(SCHEMA, {**good, "patches": []}) == []
    assert errors(SCHEMA, {**good, "format": True, "patches": []})
    assert errors(SCHEMA, {**good, "ok": True, "error": {"message": "x"}, "patches": []})


def test_a_usage_error_under_json_prints_the_envelope(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    code, data = envelope(project, "list", "--bogus")
    assert code == Exit.BAD_INPUT and "--bogus" in data["error"]["message"]
    code, out, err = project.run("frobnicate", "--json")
    data = json.loads(out)
    assert code == Exit.BAD_INPUT and data["command"] is None and not errors(SCHEMA, data)
    assert "invalid choice" in err


def test_every_command_takes_json_and_prints_one_envelope(tmp_path: Path) -> None:
    """docs/json.md: every command takes --json. Each row of the command table, run with
    --json (and its required arguments) where there is no project: one envelope, the
    command's own error, never a usage error about --json."""
    from series.cli import COMMANDS
    from series.commands.options import flat

    empty = tmp_path / "no-project"
    empty.mkdir()
    for command in COMMANDS:
        declared = flat(command.load().OPTIONS)
        required = [
            o.choices[0] if o.choices else "P1" for o in declared if o.positional and not o.nargs
        ]
        argv = ["-C", str(empty), command.name, *required, "--json"]
        out, err = io.StringIO(), io.StringIO()
        code = main(argv, out=out, err=err)
        data = json.loads(out.getvalue())  # exactly one JSON document
        assert not errors(SCHEMA, data), (command.name, errors(SCHEMA, data))
        assert data["command"] == command.name and data["exit_code"] == code, data
        assert "unrecognized arguments" not in err.getvalue(), (command.name, err.getvalue())
        assert "series.toml" in data["error"]["message"], (command.name, data["error"])


def test_rebase_json_says_where_the_checkout_stands(tmp_path: Path) -> None:
    project = moving_project(tmp_path, conflict=True)
    up = str(project.upstream)
    code, data = envelope(project, "rebase", "--onto", "main", "--upstream", up)
    assert code == Exit.CONFLICT and "P1" in data["error"]["message"]
    resolve_p1(project.work)
    code, data = envelope(project, "rebase", "--continue")
    assert code == 0 and data["error"] is None, data
    main_commit = git(project.upstream, "rev-parse", "main")
    assert data["action"] == "continue" and data["in_progress"] is False
    assert data["base"] == main_commit == git(project.work, "rev-parse", "refs/series/base")
    assert data["tip"] == git(project.work, "rev-parse", "series")
    assert data["applied"] == ["P1", "P2", "P3"]
