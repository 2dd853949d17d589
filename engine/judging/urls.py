"""Server URLs without their secrets: a key in ``http://user:KEY@host``, ``?api-key=KEY`` or
``#token=KEY`` never reaches the store, an error message or a log line.

Three places of a URL can carry a credential, and each is handled:

- the user part (``user:KEY@``): shown as ``***@``, dropped from the cache's server label;
- a query parameter whose name looks like a secret (``key``, ``api-key``, ``token``,
  ``access_token``, ``sig``, ``auth``, ``password``, ``session``, ...) or whose value looks like an
  API key (``sk-...``): its value shown as ``***``;
- the fragment (``#...``): never sent to the server by any HTTP client, so it can only be there to
  carry something private; shown as ``#***``, dropped from the server label.

``redact_url`` keeps the shape (``http://***@host/v1?key=***``) so a person can still tell which
server was meant; ``server_label`` drops the user part and the fragment and is what the call cache
keys on; ``redact_urls`` applies ``redact_url`` to every URL inside free text (an error message, a
comma-separated ``--base-url`` list).
"""

from __future__ import annotations

import base64
import re
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlencode, urlsplit, urlunsplit

MASK = "***"
_SECRET_PARAM = re.compile(
    r"key|token|secret|passw|pwd|sig|auth|credential|session|bearer|jwt|cookie|private|client_id", re.I
)
_SECRET_VALUE = re.compile(r"^(sk|pk|rk|gh[pousr]|xox[abp]|hf)[-_]", re.I)  # API keys by their prefix
_URL_IN_TEXT = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s,'\"<>]+")
_TRAILING = ".;:)]}!?"  # punctuation after a URL in a sentence, not part of it


def _secret(name: str, value: str) -> bool:
    return bool(_SECRET_PARAM.search(name) or _SECRET_VALUE.match(value))


def _clean(url: str, mark: str | None) -> str:
    """``url`` with its user part, secret query values and fragment masked (``mark``) or dropped
    (``mark`` None: the user part and fragment go, secret query values still read ``***``)."""
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
        query = urlencode([(k, MASK if _secret(k, v) else v) for k, v in pairs], safe="*")
    fragment = MASK if parts.fragment and mark else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_url(url: str) -> str:
    """``url`` with any user name/password shown as ``***``, secret-looking query values and any
    fragment hidden."""
    return _clean(url, MASK)


def server_label(urls: list[str]) -> str:
    """The servers of one ``--base-url`` list as the cache keys them: sorted, without credentials or
    fragment, secret query values masked, without a trailing slash."""
    return ",".join(sorted({_clean(u, None).rstrip("/") for u in urls}))


def _redact_match(m: re.Match) -> str:
    url = m.group(0)
    tail = len(url) - len(url.rstrip(_TRAILING))
    core, rest = (url[:-tail], url[-tail:]) if tail else (url, "")
    return redact_url(core) + rest


def redact_urls(text: str) -> str:
    """Every URL in free text (an error, a comma-separated list of URLs) passed through ``redact_url``."""
    return _URL_IN_TEXT.sub(_redact_match, text)


def secrets_in(url: str | None) -> set[str]:
    """Every secret ``url`` carries, in each form it may come back in: the user part (``user:pw``,
    the password alone, and base64 of ``user:pw`` as an HTTP client sends it in a Basic
    ``Authorization`` header), each secret-looking query value (as given and percent-encoded) and the
    fragment. Strings shorter than 4 characters are left out (masking them would mask ordinary
    words)."""
    if not url:
        return set()
    try:
        parts = urlsplit(url)
    except ValueError:
        return set()
    found: set[str] = set()
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        plain = unquote(userinfo)
        found |= {userinfo, plain, base64.b64encode(plain.encode()).decode()}
        found |= set(plain.split(":", 1)[1:])
    for k, v in parse_qsl(parts.query, keep_blank_values=True):
        if _secret(k, v):
            found |= {v, quote(v, safe=""), quote_plus(v)}
    if parts.fragment:
        found |= {parts.fragment, unquote(parts.fragment)}
    return {x for x in found if len(x) >= 4}


_QUERY_IN_TEXT = re.compile(r"([?&]([^=&#\s]+)=)([^&#\s,'\")]*)")


def scrub(text: str, secrets: set[str] | frozenset[str] = frozenset()) -> str:
    """``text`` (a server's error body, a client's exception) made safe to store or print: every URL
    redacted, every secret-looking ``name=value`` of a query without its URL (a request path the
    server quoted) masked, and each of ``secrets`` (the API key, ``secrets_in`` of the base URLs)
    replaced by ``***``, longest first."""
    text = redact_urls(text)
    text = _QUERY_IN_TEXT.sub(
        lambda m: m.group(1) + MASK if _secret(unquote(m.group(2)), unquote(m.group(3))) else m.group(0), text
    )
    for secret in sorted((x for x in secrets if x and len(x) >= 4), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
