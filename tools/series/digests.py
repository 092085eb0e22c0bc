"""SHA-1 and SHA-256 without OpenSSL: the digests series computes itself (git's object
ids, the keys of what it keeps).

``hashlib`` imports OpenSSL's ``_hashlib`` first (loading libcrypto: about 17M
instructions, where ``_sha1`` and ``_sha256`` are about 13M together, and a
rebase ``--skip``'s whole Python process about 550M); the builtin modules give
the same digests of the same bytes.
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

__all__ = ["sha1", "sha256"]
