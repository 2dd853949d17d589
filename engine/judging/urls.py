"""Server URLs without their secrets: a key in ``http://user:KEY@host`` or ``?api-key=KEY`` never
reaches the store, an error message or a log line.

``redact_url`` keeps the shape (``http://***@host/v1``) so a person can still tell which server was
meant; ``server_label`` drops the user part entirely and is what the call cache keys on.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

_SECRET_PARAM = re.compile(r"key|token|secret|passw|sig|auth|credential", re.I)


def _clean(url: str, mark: str | None) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unreadable URL>"
    netloc = parts.netloc
    if "@" in netloc:
        host = netloc.rsplit("@", 1)[1]
        netloc = f"{mark}@{host}" if mark else host
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, "***" if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_url(url: str) -> str:
    """``url`` with any user name/password shown as ``***`` and secret-looking query values hidden."""
    return _clean(url, "***")


def server_label(urls: list[str]) -> str:
    """The servers of one ``--base-url`` list as the cache keys them: sorted, without credentials,
    without a trailing slash."""
    return ",".join(sorted({_clean(u, None).rstrip("/") for u in urls}))


def redact_urls(text: str) -> str:
    """Every ``scheme://user:secret@`` in free text (an error, a list of URLs) with the user part hidden."""
    return re.sub(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@,]+@", r"\1***@", text)
