"""Built-in evaluators: each scores one (original, processed) pair."""

from __future__ import annotations

from .answer_quality import AnswerQuality

__all__ = ["AnswerQuality"]
