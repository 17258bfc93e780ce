"""URLs and text made safe to write: no credentials in reports, baselines, rows or
logs.

:func:`safe_url` is the one place that decides what of a URL may be written
anywhere. It drops

- the user information (``user:password@``);
- every query parameter whose name looks like a secret (see :func:`secret_name`);
- the fragment (OAuth puts ``access_token`` there).

:func:`redact_urls` applies it to every URL inside a piece of text (a command-line
argument, an exception message).

API keys: :func:`pytest_context_bench.keys.clean_api_key` is the one place a key is
read, and registers it (:func:`register_secret`); the cache transports register the
value of every credential header of each request before sending it
(:func:`register_headers`), whatever SDK or System set it. :func:`redact` replaces
every registered secret (and every ``Bearer`` token) in a piece of text, whatever
library wrote it; it is applied to every error message the plugin stores (rows) or
prints (pytest's failure text, JUnit), and (registered secrets only) to the
responses the reports show.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = [
    "SECRET_WORDS",
    "endpoint_of",
    "name_words",
    "redact",
    "redact_secrets",
    "redact_urls",
    "register_headers",
    "register_secret",
    "safe_url",
    "secret_header",
    "secret_name",
]

#: A query parameter is a secret when its whole name, or the last word of its name,
#: is one of these (see :func:`secret_name`). Matching is on whole words: ``design``
#: (which contains ``sig``), ``author`` (``auth``) and ``max_tokens`` (``token``)
#: are not secrets.
SECRET_WORDS = frozenset(
    {
        "key",
        "apikey",
        "api_key",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "auth",
        "authorization",
        "sig",
        "signature",
        "password",
        "passwd",
        "pwd",
        "pass",
        "passphrase",
        "secret",
        "client_secret",
        "credential",
        "credentials",
        "session",
        "sessionid",
        "code",
        "jwt",
        "bearer",
        "private_key",
        "hmac",
        "otp",
    }
)

# Words of a parameter name: separated by "-", "_", ".", spaces, or a change from
# lower case (or a digit) to upper case ("apiKey", "X-Amz-Signature", "APIKey").
_WORD_BREAK = re.compile(r"[-_.\s]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

# scheme://... up to whitespace, a quote or an angle bracket.
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")


def name_words(name: str) -> list[str]:
    """The lower-case words of a parameter name (see :data:`SECRET_WORDS`)."""
    return [w.lower() for w in _WORD_BREAK.split(name.strip()) if w]


def secret_name(name: str) -> bool:
    """True when a query parameter called ``name`` may carry a secret.

    Case does not matter, and ``-``, ``_``, ``.``, spaces and camelCase separate
    words. A name is a secret when its words joined by ``_`` (``api-key`` is
    ``api_key``, ``apiKey`` too) or its last word is one of :data:`SECRET_WORDS`:
    ``key``, ``X-Amz-Signature``, ``x-goog-api-key``, ``subscription-key``,
    ``accessToken``, ``db_password`` are; ``design``, ``author``, ``max_tokens``,
    ``token_type``, ``keyword``, ``code_challenge`` are not.
    """
    words = name_words(name)
    if not words:
        return False
    return "_".join(words) in SECRET_WORDS or words[-1] in SECRET_WORDS


def safe_url(url: str) -> str:
    """``url`` without user information, secret-looking query parameters and
    fragment; other query parameters are kept in their order.

    >>> safe_url("http://user:KEY@host:8000/v1?api-key=KEY&model=m#access_token=T")
    'http://host:8000/v1?model=m'
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<invalid URL>"
    if not parts.scheme or not parts.netloc:
        if "@" in url or "?" in url:
            return "<invalid URL>"
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    query = ""
    if parts.query:
        kept = [
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if not secret_name(k)
        ]
        query = urlencode(kept)
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def endpoint_of(url: str) -> str:
    """``scheme://host:port`` of ``url`` (the port as written; no user
    information, path or query): the endpoint the report counts requests for."""
    scheme, _, rest = url.partition("://")
    netloc = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rpartition("@")[2]
    return f"{scheme}://{netloc}"


def redact_urls(text: str) -> str:
    """``text`` with every URL in it replaced by its :func:`safe_url`."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: safe_url(m.group(0)), text)


# ------------------------------------------------------------------------ API keys

#: What a redacted secret becomes.
REDACTED = "***"

#: Shorter values are not registered: replacing them would garble ordinary text.
_MIN_SECRET = 8

_SECRETS: set[str] = set()
_SECRETS_LOCK = threading.Lock()
#: the registered secrets, longest first (what redact_secrets replaces, in order)
_BY_LENGTH: list[tuple[str, ...]] = [()]

# "Bearer <token>" as any HTTP library may quote a header it refused.
_BEARER = re.compile(r"(?i)\b(bearer)(\s+|\\t|%20)[^\s'\"<>,;)\]}]+")


def register_secret(value: str) -> None:
    """Redact ``value`` from every text :func:`redact` sees from now on, in this
    process: stripped, and in the ``repr`` and bytes-``repr`` spellings of both the
    stripped and the raw value (``b'KEY\\n'`` goes whole). Values under 8 characters
    (stripped) are ignored: replacing them would garble ordinary words."""
    plain = value.strip()
    if len(plain) < _MIN_SECRET:
        return
    forms = {plain}
    for each in {plain, value}:
        forms.add(repr(each)[1:-1])
        forms.add(repr(each.encode("utf-8", "replace"))[2:-1])
    with _SECRETS_LOCK:
        _SECRETS.update(forms)
        _BY_LENGTH[0] = tuple(sorted(_SECRETS, key=len, reverse=True))


#: A request header carries a credential when its lower-cased name contains one of
#: these (``authorization``, ``proxy-authorization``, ``api-key``, ``x-api-key``,
#: ``x-goog-api-key``, ``x-auth-token``, ``cookie``...), unless it is one of
#: :data:`PLAIN_HEADERS`.
SECRET_HEADER_PARTS = ("auth", "key", "token", "secret", "password", "cookie")
#: Headers whose names match but that carry no credential: a fresh id per request.
PLAIN_HEADERS = frozenset({"idempotency-key", "x-idempotency-key"})


def secret_header(name: str) -> bool:
    """True when a request header called ``name`` carries a credential (see
    :data:`SECRET_HEADER_PARTS`)."""
    name = name.strip().lower()
    return name not in PLAIN_HEADERS and any(p in name for p in SECRET_HEADER_PARTS)


def register_headers(headers: Iterable[tuple[str, str]]) -> None:
    """:func:`register_secret` the value of every credential header
    (:func:`secret_header`) of a request about to be sent, and the credential of a
    value with a scheme (``Basic <credential>``, ``token <credential>``)."""
    for name, value in headers:
        if secret_header(name):
            register_secret(value)
            _scheme, _, credential = value.strip().partition(" ")
            if credential:
                register_secret(credential)


def redact_secrets(text: str, bearer: bool = True) -> str:
    """``text`` with every registered secret and (``bearer``) every ``Bearer``
    token replaced by ``***``. A model's answer is redacted with ``bearer=False``:
    only the registered secrets go, so "the bearer of" stays prose."""
    for secret in _BY_LENGTH[0]:  # replaced whole, never mutated
        if secret in text:
            text = text.replace(secret, REDACTED)
    if bearer and ("earer" in text or "EARER" in text):
        text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return text


def redact(text: str) -> str:
    """``text`` safe to store or print: :func:`redact_urls`, then
    :func:`redact_secrets`."""
    return redact_secrets(redact_urls(text))
