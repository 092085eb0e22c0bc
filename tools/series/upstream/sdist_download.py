"""Downloading a release sdist from the package index, without running any of it.

``pip download`` prepares an sdist's metadata before it keeps the file,
and that runs the sdist's ``setup.py`` or build backend: a series.toml
naming another package in ``[upstream.sdist]`` would run that package's
code. So the archive is fetched as data: the index's file list for the
package (the JSON simple API, PEP 691, or the HTML one, PEP 503), the
``NAME-VERSION.tar.gz`` in it, its bytes checked against the sha256 the
index gives. Nothing is unpacked here (series.upstream.pin.import_sdist
reads the tar with ``filter="data"``).

The index is pip's: ``PIP_INDEX_URL``, else the ``index-url`` of pip's
configuration (``pip config list``, which runs no package), else PyPI.
Proxies come from the usual environment variables (urllib). What pip
does and this does not: credentials from keyring, and pip's own HTTP
cache (series keeps the archive in its cache, so it is fetched once).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from series import json_text
from series.errors import SeriesError

PYPI = "https://pypi.org/simple/"
_JSON = "application/vnd.pypi.simple.v1+json"
_ACCEPT = f"{_JSON}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    sha256: str | None


def normalize(name: str) -> str:
    """PEP 503's name normalisation."""
    return re.sub(r"[-_.]+", "-", name).lower()


def index_url() -> str:
    """pip's index: PIP_INDEX_URL, else pip's configuration, else PyPI."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"]
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return PYPI
    found = re.search(r"^[\w:.-]*\.index-url='([^']+)'$", proc.stdout, re.MULTILINE)
    return found.group(1) if found else PYPI


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []  # (href, text)
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self.links.append((self._href, data.strip()))
            self._href = None


def parse_listing(body: bytes, content_type: str, base: str) -> list[IndexFile]:
    """The files of one project page of a simple index (JSON or HTML)."""
    if content_type.startswith(_JSON) or content_type.startswith("application/json"):
        data = json_text.loads(body.decode("utf-8"))
        return [
            IndexFile(
                str(f["filename"]),
                urllib.parse.urljoin(base, str(f["url"])),
                (f.get("hashes") or {}).get("sha256"),
            )
            for f in data.get("files", [])
        ]
    parser = _Links()
    parser.feed(body.decode("utf-8", "replace"))
    files = []
    for href, text in parser.links:
        url, _, fragment = href.partition("#")
        digest = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else None
        name = text or urllib.parse.unquote(url.rsplit("/", 1)[-1])
        files.append(IndexFile(name, urllib.parse.urljoin(base, url), digest))
    return files


def pick(files: list[IndexFile], package: str, version: str) -> IndexFile | None:
    """The ``NAME-VERSION.tar.gz`` (or ``.tgz``) of ``files``, NAME compared normalised."""
    for f in files:
        for ext in (".tar.gz", ".tgz"):
            if f.filename.endswith(ext):
                name, _, ver = f.filename.removesuffix(ext).rpartition("-")
                if normalize(name) == normalize(package) and ver == version:
                    return f
    return None


def _get(url: str, timeout: float, accept: str | None = None) -> tuple[bytes, str, str]:
    import urllib.request  # only here: with ssl and http, it costs every command a moment

    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return answer.read(), answer.headers.get("Content-Type", ""), answer.geturl()


def download(package: str, version: str, target: Path, *, timeout: float) -> Path:
    """``package``'s ``version`` sdist, checked against the index's sha256, at ``target``."""
    index = index_url()
    what = f"the {package}=={version} sdist"
    if urllib.parse.urlsplit(index).scheme not in ("https", "http"):
        raise SeriesError(
            f"cannot download {what}: the package index {index} is not an http(s) URL",
            hint="set PIP_INDEX_URL to an https URL, or pass --upstream FILE.tar.gz",
        )
    page = urllib.parse.urljoin(index.rstrip("/") + "/", normalize(package) + "/")
    try:
        body, kind, base = _get(page, timeout, _ACCEPT)
        found = pick(parse_listing(body, kind, base), package, version)
        if found is None:
            raise SeriesError(
                f"cannot download {what}: the package index has no {package}-{version}.tar.gz",
                why=f"{page} lists no such file",
                hint="check upstream.sdist.version, or pass --upstream FILE.tar.gz",
            )
        if urllib.parse.urlsplit(found.url).scheme not in ("https", "http"):
            raise SeriesError(f"cannot download {what}: {found.url} is not an http(s) URL")
        data, _, _ = _get(found.url, timeout)
    except urllib.error.HTTPError as exc:
        raise SeriesError(
            f"cannot download {what}",
            why=f"{exc.url}: HTTP {exc.code} {exc.reason}",
            hint="check the package name and version, or pass --upstream FILE.tar.gz",
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise SeriesError(
            f"cannot download {what}",
            why=f"{page}: {getattr(exc, 'reason', exc)}",
            hint="check the package index is reachable, or pass --upstream FILE.tar.gz",
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    if found.sha256 and digest != found.sha256.lower():
        raise SeriesError(
            f"cannot download {what}: the file does not match the index's sha256",
            why=f"{found.url}\nsha256 {digest}\nthe index says {found.sha256}",
            hint="run the command again; if it persists, the index or a proxy is serving "
            "another file",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".series-", delete=False) as fh:
        fh.write(data)
    Path(fh.name).replace(target)
    return target
