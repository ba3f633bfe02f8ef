"""The signature of the engine's calls to an HTTP agent (``Baton-Signature``)."""

from __future__ import annotations

import hashlib
import hmac
from typing import Optional, Union

SIGNATURE_HEADER = "Baton-Signature"
"""The header that carries a call's signature."""

_PREFIX = "sha256="


def _key(secret: Union[str, bytes]) -> bytes:
    return secret.encode() if isinstance(secret, str) else bytes(secret)


def sign(secret: Union[str, bytes], body: bytes) -> str:
    """The ``Baton-Signature`` value of ``body``: ``sha256=`` and the lowercase
    hex HMAC-SHA256 of the exact body bytes under ``secret``.
    """
    return _PREFIX + hmac.new(_key(secret), body, hashlib.sha256).hexdigest()


def verify(secret: Union[str, bytes], body: bytes, header: Optional[str]) -> bool:
    """Whether ``header`` is the signature of ``body`` under ``secret``.

    Compared in constant time; a missing or malformed header is ``False``.
    Call it on the raw body, before decoding it.
    """
    if not header:
        return False
    given = header.strip()
    if not given.startswith(_PREFIX):
        return False
    want = hmac.new(_key(secret), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(given[len(_PREFIX):].lower().encode(), want.encode())
