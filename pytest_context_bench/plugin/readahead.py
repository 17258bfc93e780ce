"""Reading and counting the command line's examples a block ahead (in one process).

An example's input text is counted on every item's path. Counted one at a time,
between pytest's own work for each item, each count found the tokenizer's tables
and the JSON decoder cold: an in-run count took about three times what it takes in
a loop. :class:`ReadAhead` reads the next :data:`BLOCK` examples this process will
run (in the order of ``session.items``), counts their input fields in one loop, and
hands each item its example already read.

Nothing it gives differs from what the item would have computed: the example is the
one ``ExampleRef.load`` returns (read once, given to one item only), and a count is
the tokenizer's count of the very same text (looked up by the text's value). A text
not counted ahead (a System's new output, a field of another shape) is counted as
before. It is used only where the order is known and the tokenizer is ours (a
tiktoken encoding, which is a pure function of the text): in one process, without
calls started ahead (``--ctxbench-concurrency`` reads its examples itself), and not
with a tokenizer of the user's (``module:attr``, ``set_tokenizer(callable)``), which
may keep state.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..tokens import DEFAULT_PROMPT_FIELDS, texts_of

__all__ = ["BLOCK", "ReadAhead"]

#: examples read and counted in one block
BLOCK = 64
#: characters counted ahead in one block at most (long examples: fewer per block)
MAX_CHARS = 2_000_000


class ReadAhead:
    """The examples of ``cases`` (the run's command-line cases, in run order) read
    and counted a block ahead; callable as the tokenizer of their recorders."""

    __slots__ = ("_count", "_cases", "_seq", "_memo", "_examples", "_start", "_end", "_block")

    def __init__(
        self, count: Callable[[str], int], cases: Sequence[Any], block: int | None = None
    ) -> None:
        self._count = count
        self._block = max(1, BLOCK if block is None else block)
        self._cases = list(cases)
        #: id(case) → its place in the run order
        self._seq = {id(case): i for i, case in enumerate(self._cases)}
        #: text → its count, for the texts of the current block
        self._memo: dict[str, int] = {}
        #: place → the example read for it (taken once)
        self._examples: dict[int, dict[str, Any]] = {}
        #: the places of the current block
        self._start = self._end = 0

    def __call__(self, text: str) -> int:
        found = self._memo.get(text)
        return self._count(text) if found is None else found

    def example(self, case: Any) -> dict[str, Any] | None:
        """The example of ``case`` read ahead (once), or None: then the item reads it
        itself, as without read-ahead."""
        seq = self._seq.get(id(case))
        if seq is None or self._cases[seq] is not case:
            return None
        if not self._start <= seq < self._end:
            self._read(seq)
        return self._examples.pop(seq, None)

    def _read(self, first: int) -> None:
        self._examples.clear()
        memo: dict[str, int] = {}
        texts: list[str] = []
        chars = 0
        end = min(first + self._block, len(self._cases))
        seq = first
        while seq < end:
            ref = self._cases[seq].ref
            if ref.qa >= 0:
                break  # a memory conversation: its items read it their own way
            try:
                example = ref.load()
            except Exception:  # noqa: BLE001 (the item reads it again and says why)
                break
            self._examples[seq] = example
            for name in ref.spec.text_fields or DEFAULT_PROMPT_FIELDS:
                value = example.get(name)
                if value is None:
                    continue
                for text in (value,) if type(value) is str else texts_of(value):
                    if text and text not in memo:
                        memo[text] = -1
                        texts.append(text)
                        chars += len(text)
            seq += 1
            if chars > MAX_CHARS:
                break
        count = self._count
        for text in texts:
            try:
                memo[text] = count(text)
            except Exception:  # noqa: BLE001 (counted again in the item, which says why)
                del memo[text]
        self._memo = memo
        self._start, self._end = first, max(seq, first + 1)
