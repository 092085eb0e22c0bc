"""series.toml after a rebase: the pin moved, the stand-in gone, drops recorded, comments kept."""

from __future__ import annotations

import tomllib
from pathlib import Path

from series.manifest import Dropped, parse
from series.manifest_write import write_pin

MASTER = "cec15de6c8c630d976f4c10f6ca78c0ea9c97d39"


def test_write_pin_on_the_real_manifest(project_copy: Path) -> None:
    text = (project_copy / "series.toml").read_text()
    drop = Dropped("P2", "ops: lazy", "skipped at a conflict", 23183, "a" * 40, MASTER, "x.patch")
    out = write_pin(text, ref="master", commit=MASTER, dropped=[drop])
    data = tomllib.loads(out)
    assert data["upstream"]["commit"] == MASTER and data["upstream"]["ref"] == "master"
    assert data["upstream"]["source"] == "git" and "sdist" not in data["upstream"]
    assert data["dropped"] == [
        {
            "id": "P2",
            "title": "ops: lazy",
            "pr": 23183,
            "reason": "skipped at a conflict",
            "upstream_commit": "a" * 40,
            "onto": MASTER,
            "file": "x.patch",
        }
    ]
    assert out.startswith(text.split("[upstream]")[0])  # the header comment survives
    assert "Offline stand-in" not in out and "was removed by series rebase" in out
    assert [p["id"] for p in data["patch"]] == [p["id"] for p in tomllib.loads(text)["patch"]]
    manifest = parse(project_copy / "series.toml", data)  # valid: sdist optional, [[dropped]] known
    assert manifest.upstream.sdist is None and manifest.dropped[0].id == "P2"
