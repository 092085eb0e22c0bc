"""``sha1`` and ``sha256`` without OpenSSL's hashlib: Python's own ``_sha1`` and ``_sha256``.

The same digests as hashlib's, whose import loads OpenSSL: a few ms of a
``series rebase --abort`` that checks the files it puts back by their git
blob ids (issue 23). For the modules on such a light path; a digest of
much data (an archive) may keep hashlib's faster OpenSSL code.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha1 as sha1
    from hashlib import sha256 as sha256
else:
    from _sha1 import sha1

    try:
        from _sha256 import sha256
    except ImportError:  # Python 3.12 and later
        from _sha2 import sha256

__all__ = ["blob_id", "is_hex", "sha1", "sha256"]


def blob_id(data: bytes, width: int) -> str:
    """git's id of ``data`` as a blob in a repository whose ids are ``width`` long (40:
    SHA-1, 64: SHA-256)."""
    digest = sha256 if width == 64 else sha1
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def is_hex(value: str, width: int = 40) -> bool:
    """Whether ``value`` spells a digest of ``width`` lowercase hex digits (40: a SHA-1 id):
    ``re.fullmatch(r"[0-9a-f]{40}")`` without re (whose import was 2 ms of a command)."""
    return len(value) == width and not value.strip("0123456789abcdef")
