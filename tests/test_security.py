"""No command runs from series.toml or from a URL, path, remote or revision on the command line.

Each vector gets a hostile value that makes git run ``touch PWNED``
(``--upload-pack=CMD`` read as an option, or the ``ext::`` transport under
a user configuration that allows every protocol): series must refuse it
with exit 2, naming the key or the option, and PWNED must not exist. The
git layer must hold on its own too (``--`` before URLs, GIT_ALLOW_PROTOCOL),
a GIT_DIR inherited from a git hook must not send series' git calls
to another repository, and the sdist of a package the manifest names is
fetched as a file, never run (pip download ran its setup.py).
docs/hardening.md, "Command execution and hostile URLs".
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import Project, git, make_project
from series.errors import Exit
from series.git import Repo


def pwned(tmp_path: Path) -> Path:
    return tmp_path / "pwned"


def upload_pack(tmp_path: Path) -> str:
    return f"--upload-pack=touch {pwned(tmp_path)}"


def ext_url(tmp_path: Path) -> str:
    return f"ext::sh -c touch% {pwned(tmp_path)}"


def allow_every_protocol(tmp_path: Path) -> None:
    """A user configuration that lets ext:: through (git's default refuses it)."""
    with (tmp_path / "home/.gitconfig").open("a") as fh:
        fh.write("[protocol]\n\tallow = always\n")


def set_repository(project: Project, url: str, source: str = "auto") -> None:
    path = project.root / "series.toml"
    text = path.read_text().replace(f'repository = "{project.upstream}"', f'repository = "{url}"')
    path.write_text(text.replace('source = "git"', f'source = "{source}"'))


def applied(tmp_path: Path) -> Project:
    project = make_project(tmp_path)
    code, _, err = project.run("apply")
    assert code == 0, err
    return project


@pytest.mark.parametrize("kind", ["option", "ext"])
def test_a_hostile_manifest_repository_is_refused_naming_the_key(tmp_path: Path, kind: str) -> None:
    project = make_project(tmp_path)
    if kind == "ext":
        allow_every_protocol(tmp_path)
    # auto: on main the fetch ran the command, then fell back to the sdist.
    set_repository(project, upload_pack(tmp_path) if kind == "option" else ext_url(tmp_path))
    code, _, err = project.run("apply")
    assert not pwned(tmp_path).exists()
    assert code == Exit.BAD_INPUT, err
    assert "upstream.repository" in err
    assert not project.work.exists()  # refused before anything was made


@pytest.mark.parametrize("url", ["fd::17", "foo::bar", "ftp://host/x.git", "-x.git"])
def test_other_transports_and_option_like_urls_are_refused(tmp_path: Path, url: str) -> None:
    project = make_project(tmp_path)
    set_repository(project, url)
    code, _, err = project.run("list")
    assert code == Exit.BAD_INPUT
    assert "upstream.repository" in err


def test_an_option_like_manifest_ref_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    path = project.root / "series.toml"
    path.write_text(path.read_text().replace('ref = "v1.0"', 'ref = "--output=x"'))
    code, _, err = project.run("list")
    assert code == Exit.BAD_INPUT
    assert "upstream.ref" in err


@pytest.mark.parametrize(
    ("key", "old", "new"),
    [
        ("package", 'package = "tiny"', 'package = "--index-url=http://index.invalid/x"'),
        ("version", 'version = "1.0"', 'version = "1.0 --pre"'),
    ],
)
def test_sdist_package_and_version_must_be_a_name_and_a_version(
    tmp_path: Path, key: str, old: str, new: str
) -> None:
    """They name a file of the package index (pip got "<package>==<version>" as an argument)."""
    project = make_project(tmp_path)
    path = project.root / "series.toml"
    path.write_text(path.read_text().replace(old, new))
    code, _, err = project.run("list")
    assert code == Exit.BAD_INPUT
    assert f"upstream.sdist.{key}" in err


@pytest.mark.parametrize("kind", ["option", "ext"])
def test_apply_upstream_option_is_refused(tmp_path: Path, kind: str) -> None:
    project = make_project(tmp_path)
    if kind == "ext":
        allow_every_protocol(tmp_path)
    value = upload_pack(tmp_path) if kind == "option" else ext_url(tmp_path)
    code, _, err = project.run("apply", "--source", "git", f"--upstream={value}")
    assert not pwned(tmp_path).exists()
    assert code == Exit.BAD_INPUT, err
    assert "argument --upstream" in err
    assert not project.work.exists()


def test_rebase_upstream_and_onto_options_are_refused(tmp_path: Path) -> None:
    project = applied(tmp_path)
    before = git(project.work, "for-each-ref")
    for argv in (
        ["--onto", "v1.0", f"--upstream={upload_pack(tmp_path)}"],
        [f"--onto={upload_pack(tmp_path)}", "--upstream", str(project.upstream)],
    ):
        code, _, err = project.run("rebase", *argv)
        assert not pwned(tmp_path).exists()
        assert code == Exit.BAD_INPUT, err
        option = argv[0] if argv[0].startswith("--onto=") else argv[2]
        assert f"argument {option.split('=')[0]}" in err
    assert git(project.work, "for-each-ref") == before  # no rebase was started


def test_check_conflicts_upstream_and_onto_options_are_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    allow_every_protocol(tmp_path)  # on main, ext:: ran its command
    for argv in (
        ["--onto", "v1.0", f"--upstream={upload_pack(tmp_path)}"],
        [f"--onto={upload_pack(tmp_path)}", "--upstream", str(project.upstream)],
        ["--onto", "v1.0", f"--upstream={ext_url(tmp_path)}"],
    ):
        code, _, err = project.run("check-conflicts", "--no-matrix", *argv)
        assert not pwned(tmp_path).exists()
        assert code == Exit.BAD_INPUT, err
        assert "argument --onto" in err or "argument --upstream" in err


def test_branches_push_remote_option_is_refused(tmp_path: Path) -> None:
    project = applied(tmp_path)
    # With a default remote, `ls-remote --heads --upload-pack=CMD` ran CMD against it.
    git(project.work, "remote", "add", "origin", str(project.upstream))
    before = git(project.work, "for-each-ref")
    code, _, err = project.run("branches", f"--push={upload_pack(tmp_path)}")
    assert not pwned(tmp_path).exists()
    assert code == Exit.BAD_INPUT, err
    assert "argument --push" in err
    assert git(project.work, "for-each-ref") == before  # no branch was made


def test_the_git_layer_never_reads_a_url_as_an_option_or_runs_ext(tmp_path: Path) -> None:
    """Where the checks above are bypassed, git itself must not run the command."""
    allow_every_protocol(tmp_path)
    repo = Repo.init(tmp_path / "repo.git", bare=True)
    for url in (upload_pack(tmp_path), ext_url(tmp_path)):
        status, _ = repo.remote.fetch(url, ["+refs/heads/*:refs/x/*"])
        assert status != 0
        assert not repo.remote.reachable(url)[0]
        assert repo.remote.rev(url, "main") is None
        assert not pwned(tmp_path).exists(), url
    upstream = tmp_path / "upstream"
    git(tmp_path, "init", "-q", str(upstream))
    git(upstream, "commit", "-q", "--allow-empty", "-m", "one")
    assert repo.remote.rev(str(upstream), upload_pack(tmp_path)) is None
    assert not pwned(tmp_path).exists()


def test_an_inherited_git_dir_does_not_misdirect_series(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A git hook runs series with GIT_DIR (and GIT_INDEX_FILE...) of the repository it serves."""
    project = make_project(tmp_path)
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    git(other, "commit", "-q", "--allow-empty", "-m", "the hook's repository")
    head = git(other, "rev-parse", "HEAD")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git/index"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.bare'='true'")
    code, _, err = project.run("apply")
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.delenv("GIT_INDEX_FILE", raising=False)
    monkeypatch.delenv("GIT_CONFIG_PARAMETERS", raising=False)
    assert code == 0, err
    assert git(project.work, "rev-parse", "refs/series/base") == project.commit
    assert git(project.work, "log", "--format=%s", "-3").splitlines()[0].startswith("core: f9")
    assert git(other, "for-each-ref", "refs/series/") == ""  # nothing series made went there
    assert git(other, "rev-parse", "HEAD") == head
    assert git(project.work, "status", "--porcelain") == ""


def test_a_local_path_that_starts_with_a_dash_can_be_named(tmp_path: Path) -> None:
    """The hint's way: ./-NAME is a path, fetched as such."""
    project = make_project(tmp_path)
    dashed = project.root / "-upstream"
    shutil.copytree(project.upstream, dashed)
    code, _, err = project.run("apply", "--source", "git", "--upstream=-upstream")
    assert code == Exit.BAD_INPUT and "./-upstream" in err
    code, _, err = project.run("apply", "--source", "git", f"--upstream={dashed}")
    assert code == 0, err


def hostile_sdist(path: Path, package: str, marker: Path) -> bytes:
    """An sdist of the tiny upstream whose setup.py touches ``marker`` when run."""
    import io
    import tarfile

    from helpers import UPSTREAM_FILES

    files = {**UPSTREAM_FILES, "setup.py": f"open({str(marker)!r}, 'w').close()\n"}
    files["PKG-INFO"] = f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{package}-1.0/{name}")
            info.size, info.mtime, info.mode = len(data), 1_700_000_000, 0o644
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


@pytest.mark.parametrize("listing", ["html", "json"])
def test_the_sdist_download_runs_none_of_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listing: str
) -> None:
    """pip download ran the sdist's setup.py: a manifest naming any package ran its code."""
    import hashlib
    import http.server
    import json
    import threading

    from test_upstream import PACKAGE, use_sdist_manifest

    archive = hostile_sdist(tmp_path / "sdist.tar.gz", PACKAGE, pwned(tmp_path))
    digest = hashlib.sha256(archive).hexdigest()
    filename = f"{PACKAGE}-1.0.tar.gz"

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith(f"/simple/{PACKAGE}"):
                if listing == "json":
                    kind = "application/vnd.pypi.simple.v1+json"
                    file = {"filename": filename, "url": f"/files/{filename}"}
                    body = json.dumps({"files": [{**file, "hashes": {"sha256": digest}}]})
                else:
                    kind = "text/html"
                    body = f'<a href="/files/{filename}#sha256={digest}">{filename}</a>'
                data = body.encode()
            elif self.path == f"/files/{filename}":
                kind, data = "application/octet-stream", archive
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{server.server_port}/simple/")
        monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
        project = make_project(tmp_path)
        use_sdist_manifest(project.root)
        code, _, err = project.run("apply")
    finally:
        server.shutdown()
        server.server_close()
    assert not pwned(tmp_path).exists()
    assert code == 0, err
    cached = tmp_path / f"home/.cache/keras-series/sdist/{filename}"
    assert cached.read_bytes() == archive
    base = git(project.work, "rev-parse", "refs/series/base^{tree}")
    assert git(project.work, "ls-tree", "--name-only", base, "setup.py") == "setup.py"
