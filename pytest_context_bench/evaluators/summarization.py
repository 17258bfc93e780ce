"""SummarizationQuality: ROUGE-L and ROUGE-Lsum, identical to Google's ``rouge-score``.

The scores equal ``rouge_score.rouge_scorer.RougeScorer(["rougeL", "rougeLsum"])`` with
its default tokenizer and no stemming, on any input, but the longest common subsequences
are computed bit-parallel on Python integers instead of with an O(n·m) table:

- **rougeL** (sentence level) needs only the LCS *length*. One integer bitmask per
  distinct token of one side marks where that token occurs; one pass over the other side
  updates a single bit-vector with the Allison–Dix / Hyyrö recurrence
  ``V = (V + U) | (V - U)``, ``U = V & M[token]``. After the pass, the zero bits of
  ``V`` count the LCS.
- **rougeLsum** (summary level) needs, for every reference sentence, the union of the
  token *positions* of one particular LCS with each candidate sentence: the one
  ``rouge-score``'s table backtrack finds. All reference sentences sit side by side in
  one bit-vector, separated by guard bits that absorb carries, so one pass over a
  candidate sentence advances the DP of every (reference sentence, candidate sentence)
  pair at once. The backtrack is then replayed for all pairs at once as well, a constant
  number of integer operations per candidate token (see :func:`_union_block`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["SummarizationQuality", "rouge_l", "rouge_lsum"]

#: The tokens of ``rouge-score``'s default tokenizer: after ``str.lower()`` it replaces
#: every run of characters outside ``[a-z0-9]`` by a space and splits, which leaves
#: exactly the maximal ``[a-z0-9]`` runs.
_TOKEN_RE = re.compile(r"[a-z0-9]+")

#: A bit-vector side longer than this many bits is processed in blocks, so that the
#: token bitmasks of one block (at most one per distinct token of the block) stay small
#: even when both texts are huge and have huge vocabularies.
_BLOCK_BITS = 1 << 15

#: The rougeLsum backtrack keeps the DP column of every candidate token of one sentence;
#: past this many bytes it keeps every ``k``-th column only and recomputes the others
#: chunk by chunk (checkpointing), so a 1 MB response with no newline needs bounded
#: memory.
_LSUM_COLUMN_BUDGET = 16 << 20
_LSUM_MIN_CHUNK = 64

#: Bitmasks narrower than this are built by or-ing bits into integers (see
#: :func:`_bitmasks`).
_DIRECT_BITS = 1 << 13

#: ``_REVERSED_BYTE[b]`` is ``b`` with its 8 bits in reverse order.
_REVERSED_BYTE = bytes(int(f"{b:08b}"[::-1], 2) for b in range(256))

_Score = tuple[float, float, float]
_ZERO: _Score = (0.0, 0.0, 0.0)


def _tokenize(text: str) -> list[str]:
    """Tokens exactly as ``rouge-score``'s default tokenizer without stemming.

    :param text: the text.
    :return: the lower-cased ``[a-z0-9]+`` runs, in order.
    """
    return _TOKEN_RE.findall(text.lower())


def _sentences(text: str) -> list[list[str]]:
    """The tokenized sentences ``rougeLsum`` sees: the non-empty lines of ``text``.

    :param text: the text; sentences are separated by ``"\\n"`` only, as in
        ``rouge-score``.
    :return: one token list per non-empty line (a line may give no tokens).
    """
    return [_tokenize(line) for line in text.split("\n") if line]


def _prf(hits: int, n_target: int, n_prediction: int) -> _Score:
    """Precision, recall and F1, with ``rouge-score``'s exact floating-point formulas.

    :param hits: the matched token count.
    :param n_target: the number of reference tokens (recall's denominator), ``> 0``.
    :param n_prediction: the number of predicted tokens (precision's denominator), ``>
        0``.
    :return: ``(precision, recall, f1)``.
    """
    precision = hits / n_prediction
    recall = hits / n_target
    # Same expression, same operation order as rouge_score.scoring.fmeasure, so the
    # floats are bit-identical rather than merely close.
    f1 = (
        2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    )
    return (precision, recall, f1)


def _bitmasks(
    tokens: Sequence[str], bits: Sequence[int], wanted: set[str]
) -> dict[str, int]:
    """One integer per wanted token, with bit ``bits[i]`` set where ``tokens[i]`` is it.

    Past ``_DIRECT_BITS`` bits, built through a bytearray per token, because or-ing
    ``1 << p`` into a growing integer costs O(p) per position and so O(n²) in all for a
    long text.

    :param tokens: the tokens of the bit-vector side.
    :param bits: the bit position of each token (the same length as ``tokens``).
    :param wanted: the tokens worth a mask (those that occur on the other side); any
        other token never matches, so its mask would never be read.
    :return: the masks, keyed by token.
    """
    if not bits or bits[-1] < _DIRECT_BITS:
        # Narrow: or-ing bits in is fast, and creates no container objects (each one
        # brings the cyclic garbage collector closer to a full pass).
        direct: dict[str, int] = {}
        get = direct.get
        for tok, bit in zip(tokens, bits, strict=True):
            if tok in wanted:
                direct[tok] = get(tok, 0) | (1 << bit)
        return direct
    positions: dict[str, list[int]] = {}
    for tok, bit in zip(tokens, bits, strict=True):
        if tok in wanted:
            found = positions.get(tok)
            if found is None:
                positions[tok] = [bit]
            else:
                found.append(bit)
    masks: dict[str, int] = {}
    for tok, where in positions.items():
        if len(where) < 8:
            mask = 0
            for bit in where:
                mask |= 1 << bit
        else:
            buf = bytearray((where[-1] >> 3) + 1)
            for bit in where:
                buf[bit >> 3] |= 1 << (bit & 7)
            mask = int.from_bytes(buf, "little")
        masks[tok] = mask
    return masks


def _lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of a longest common subsequence of two token lists (bit-parallel).

    :param a: one token list.
    :param b: the other token list.
    :return: the LCS length.
    """
    if len(a) > len(b):
        a, b = b, a
    # The bits run over the shorter side and the loop over the longer one, which keeps
    # the masks few and small; tokens of the longer side that never occur in the shorter
    # one leave the vector unchanged (U = 0), so they are dropped before the loop.
    present = set(a).intersection(b)
    if not present:
        return 0
    n = len(a)
    if n <= _BLOCK_BITS:
        masks = _bitmasks(a, range(n), present)
        column = [masks[tok] for tok in b if tok in masks]
        v = (1 << n) - 1
        for m in column:
            u = v & m
            # Carries out of bit n-1 only grow the part above the n low bits (by at most
            # one per step), which the final count ignores, so no masking in the loop.
            v = (v + u) | (v - u)
        return n - (v & ((1 << n) - 1)).bit_count()
    return _lcs_length_blocked(a, [tok for tok in b if tok in present], present)


def _lcs_length_blocked(a: Sequence[str], b: Sequence[str], present: set[str]) -> int:
    """:func:`_lcs_length` for a long bit side: blocks of ``_BLOCK_BITS`` bits, carries.

    Block ``k`` runs over all of ``b``, taking at each step the carry that the block
    below produced at that step; only the masks of one block exist at a time.

    :param a: the bit side (longer than ``_BLOCK_BITS``).
    :param b: the other side, already restricted to tokens that occur in ``a``.
    :param present: the tokens common to both sides.
    :return: the LCS length.
    """
    width = _BLOCK_BITS
    carries = bytearray(len(b))
    zeros = 0
    for start in range(0, len(a), width):
        block = a[start : start + width]
        size = len(block)
        full = (1 << size) - 1
        masks = _bitmasks(block, range(size), present)
        get = masks.get
        v = full
        for j, tok in enumerate(b):
            m = get(tok, 0)
            u = v & m
            s = v + u + carries[j]
            # The bit above the block is the carry into the next block at this step.
            carries[j] = s >> size
            v = (s & full) | (v - u)
        zeros += size - v.bit_count()
    return zeros


def _reverser(nbytes: int) -> Callable[[int], int]:
    """A function that reverses the order of the low ``8 * nbytes`` bits of an integer.

    :param nbytes: the width in bytes.
    :return: ``rev(x)`` with bit ``p`` of ``x`` moved to bit ``8 * nbytes - 1 - p``.
    """
    table = _REVERSED_BYTE
    from_bytes = int.from_bytes

    def rev(x: int) -> int:
        # Big-endian bytes read back as little-endian reverse the byte order; translate
        # reverses the bits inside each byte.
        return from_bytes(x.to_bytes(nbytes, "big").translate(table), "little")

    return rev


def _union_block(
    refs: Sequence[Sequence[str]],
    cands: Sequence[Sequence[str]],
    cand_vocab: set[str],
    union_counts: Counter[str],
) -> None:
    """Add to ``union_counts`` the union-LCS tokens of a block's reference sentences.

    For a reference sentence ``r`` and candidate sentence ``c``, ``rouge-score`` takes
    the LCS found by backtracking its table ``L`` from ``(|r|, |c|)``: on a match it
    takes the pair and goes diagonally; otherwise it goes left when
    ``L[i][j-1] > L[i-1][j]`` and up otherwise. In column ``j`` that walk climbs from
    row ``i`` to the first row ``i'`` that either matches ``c[j]`` (take it, go to
    ``(i'-1, j-1)``) or where ``L[i'][j] - L[i'-1][j] = 1`` (go to ``(i', j-1)``):
    exactly one step per column.

    Bit ``i`` of the bit-parallel vector after column ``j`` is zero precisely where
    ``L[i][j] - L[i-1][j] = 1``, so "the first such row at or above ``i``" is the
    highest set bit at or below a pointer, in the union of two bitmasks. With the bits
    reversed it becomes the *lowest* set bit at or above the pointer, which integer
    subtraction isolates for every reference sentence at once, given a sentinel bit
    above each sentence.

    Layout (forward): a guard bit, then sentence 1's rows, a guard bit, sentence 2's
    rows, a guard bit, and so on. A guard absorbs the carry out of the sentence below it
    (then it is cleared), and, reversed, it is the sentinel of the sentence above it.

    :param refs: the reference sentences of this block, all non-empty.
    :param cands: the candidate sentences, all non-empty.
    :param cand_vocab: every token of the candidate.
    :param union_counts: per token, the reference positions the unions cover so far.
    """
    tokens: list[str] = []
    bits: list[int] = []
    below = 0  # the guards below each sentence (their sentinels, once reversed)
    tops = 0  # the last row of each sentence: where each backtrack starts
    pos = 1
    for sent in refs:
        below |= 1 << (pos - 1)
        tokens.extend(sent)
        bits.extend(range(pos, pos + len(sent)))
        pos += len(sent)
        tops |= 1 << (pos - 1)
        pos += 1  # the guard above this sentence
    width = pos
    # Every bit of the width except the guards (bit 0, and one above each sentence).
    full = ((1 << width) - 1) ^ (below | (tops << 1))
    masks = _bitmasks(tokens, bits, cand_vocab)
    if not masks:
        return
    nbytes = (width + 7) // 8
    table = _REVERSED_BYTE
    from_bytes = int.from_bytes
    rev = _reverser(nbytes)
    rmasks = {tok: rev(m) for tok, m in masks.items()}
    full_r = rev(full)
    sentinels = rev(below)
    start = rev(tops)
    union = 0

    # Checkpointing keeps memory bounded for a very long candidate sentence.
    chunk = max(_LSUM_MIN_CHUNK, _LSUM_COLUMN_BUDGET // (nbytes + 40))

    get = masks.get
    for cand in cands:
        fwd: list[int] = []  # the match mask of each kept column
        hits: list[int] = []  # the same, reversed
        # The reversed mask of the rows where the backtrack may stop on a match in each
        # kept column: 0 when candidate tokens absent from the block follow the column.
        # Such a column leaves the vector unchanged and never matches, but the walk
        # still climbs in it, to the first row whose increment bit is set, and a run of
        # them climbs no further. From that row the kept column's own step cannot climb
        # either (it only takes the row if it matches), so the two act as one step that
        # stops at increment rows only.
        stops: list[int] = []
        for tok in cand:
            m = get(tok)
            if m is None:
                if stops:
                    stops[-1] = 0
            else:
                fwd.append(m)
                rm = rmasks[tok]
                hits.append(rm)
                stops.append(rm)
        ncols = len(fwd)
        if not ncols:
            continue
        # The vector before each chunk of columns; one chunk (no recomputation) when the
        # columns fit the budget.
        checkpoints = [full]
        if ncols > chunk:
            v = full
            for k, m in enumerate(fwd):
                if k and k % chunk == 0:
                    checkpoints.append(v)
                u = v & m
                v = ((v + u) | (v - u)) & full
        p = start
        for c in range(len(checkpoints) - 1, -1, -1):
            lo = c * chunk
            hi = min(ncols, lo + chunk)
            v = checkpoints[c]
            zrev: list[int] = []
            for m in fwd[lo:hi]:
                u = v & m
                v = ((v + u) | (v - u)) & full
                # Reversed rows where L[i][j] - L[i-1][j] = 1 (the zero bits of v).
                zrev.append(
                    full_r
                    ^ from_bytes(v.to_bytes(nbytes, "big").translate(table), "little")
                )
            for z, sm, hm in zip(
                reversed(zrev),
                reversed(stops[lo:hi]),
                reversed(hits[lo:hi]),
                strict=True,
            ):
                # Candidate stops at or above each pointer, up to and with its sentinel.
                t = ((sm | z) & (sentinels - p)) | sentinels
                # The lowest of them per sentence: the borrow of t - p runs up to it.
                low = t & (t ^ (t - p))
                hit = low & hm
                if hit:
                    union |= hit
                    # A match moves that pointer one row up (one bit higher, reversed).
                    p = low + hit
                else:
                    p = low
                if p == sentinels:
                    break
            if p == sentinels:
                break
    if union:
        # Count the covered reference positions per token, bit by bit of the union.
        by_bit = dict(zip((8 * nbytes - 1 - b for b in bits), tokens, strict=True))
        digits = bin(union)
        top = len(digits) - 1
        at = digits.find("1", 2)
        while at >= 0:
            union_counts[by_bit[top - at]] += 1
            at = digits.find("1", at + 1)


def _summary_hits(refs: list[list[str]], cands: list[list[str]]) -> int:
    """``rouge-score``'s summary-level LCS hit count (union LCS, clipped token counts).

    ``rouge-score`` walks the union tokens in order and counts one hit while the token's
    remaining counts on both sides are positive; per token that is the minimum of the
    union occurrences and the two totals, and the union occurrences never exceed the
    reference total, so ``hits = sum(min(union[t], candidate_count[t]))``.

    :param refs: the reference sentences (token lists).
    :param cands: the candidate sentences (token lists).
    :return: the hit count.
    """
    refs = [s for s in refs if s]
    cands = [s for s in cands if s]
    cand_counts = Counter(tok for sent in cands for tok in sent)
    vocab = set(cand_counts)
    union_counts: Counter[str] = Counter()
    # Reference sentences never interact, so they are grouped into blocks of bounded
    # width.
    block: list[list[str]] = []
    width = 0
    for sent in refs:
        if block and width + len(sent) + 1 > _BLOCK_BITS:
            _union_block(block, cands, vocab, union_counts)
            block, width = [], 0
        block.append(sent)
        width += len(sent) + 1
    if block:
        _union_block(block, cands, vocab, union_counts)
    return sum(min(n, cand_counts[tok]) for tok, n in union_counts.items())


def _score_l(target: list[str], prediction: list[str]) -> _Score:
    if not target or not prediction:
        return _ZERO
    return _prf(_lcs_length(target, prediction), len(target), len(prediction))


def _score_lsum(target: list[list[str]], prediction: list[list[str]]) -> _Score:
    m = sum(map(len, target))
    n = sum(map(len, prediction))
    if not m or not n:
        return _ZERO
    return _prf(_summary_hits(target, prediction), m, n)


def rouge_l(target: str, prediction: str) -> tuple[float, float, float]:
    """Sentence-level ROUGE-L, as ``RougeScorer(["rougeL"]).score(target, prediction)``.

    :param target: the reference text.
    :param prediction: the predicted text (precision is measured against it).
    :return: ``(precision, recall, f1)``; all ``0.0`` when either text has no token.
    """
    return _score_l(_tokenize(target), _tokenize(prediction))


def rouge_lsum(target: str, prediction: str) -> tuple[float, float, float]:
    """Summary-level ROUGE-Lsum, as ``RougeScorer(["rougeLsum"]).score(target, pred)``.

    Sentences are the non-empty lines (``"\\n"``-separated) of each text.

    :param target: the reference text.
    :param prediction: the predicted text (precision is measured against it).
    :return: ``(precision, recall, f1)``; all ``0.0`` when either text has no token.
    """
    return _score_lsum(_sentences(target), _sentences(prediction))


def _as_text(value: object) -> str:
    """A response or answer as text: ``None`` is empty, anything else ``str(value)``."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


_KEYS_L = ("rouge_l_precision", "rouge_l_recall", "rouge_l_f1")
_KEYS_LSUM = ("rouge_lsum_precision", "rouge_lsum_recall", "rouge_lsum_f1")


class SummarizationQuality:
    """ROUGE-L and ROUGE-Lsum of the response against the reference summary.

    Reads ``original["answer"]`` (the reference) and ``processed["response"]`` and
    returns ``rouge_l_precision``, ``rouge_l_recall``, ``rouge_l_f1`` (sentence-level
    ROUGE-L, as ``rouge-score``'s ``rougeL``) and ``rouge_lsum_precision``,
    ``rouge_lsum_recall``, ``rouge_lsum_f1`` (summary-level ROUGE-L over
    newline-separated sentences, as its ``rougeLsum``, which is what summarization
    papers report). Precision is measured against the response, recall against the
    reference.

    The values equal Google's ``rouge-score`` (``RougeScorer(["rougeL", "rougeLsum"])``,
    default tokenizer: lower-case, runs of ``[a-z0-9]``, no stemming) on any input, bit
    for bit; they are computed with bit-parallel LCS, hundreds of times faster.

    Rules:

    - no ``"answer"`` key, ``None``, or an empty list of answers: ``{}`` (nothing to
      judge);
    - a list (or tuple) of references: for each of the two families, the scores of the
      reference with the highest F1 (the first on ties), as ``RougeScorer.score_multi``;
    - a reference or response without any token (``""``, punctuation only): ``0.0``, as
      ``rouge-score`` gives;
    - a ``None`` response is empty; other non-string values are scored as
      ``str(value)``.

    >>> SummarizationQuality().score(
    ...     {"answer": "the cat on the mat"}, {"response": "the cat sat on the mat"}
    ... )["rouge_l_precision"]
    0.8333333333333334
    """

    name = "summarization_quality"

    def score(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> dict[str, float]:
        """Score one (original, processed) pair.

        :param original: the example; its ``"answer"`` is the reference summary (a
            string, or a list of strings).
        :param processed: what the System returned; its ``"response"`` is judged.
        :return: the six ROUGE keys, or ``{}`` when the example has no reference.
        """
        return self.score_details(original, processed)[0]

    def score_details(
        self, original: dict[str, Any], processed: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """Like :meth:`score`, also returning why ROUGE-L F1 is below 1 (else
        empty): ``common_tokens`` (the longest common subsequence, in tokens),
        ``reference_tokens`` and ``response_tokens`` (of the reference with the best
        ROUGE-L F1)."""
        raw_answer = original.get("answer")
        if raw_answer is None:
            return {}, {}
        targets: list[str]
        if isinstance(raw_answer, (list, tuple)):
            targets = [_as_text(a) for a in raw_answer if a is not None]
            if not targets:
                return {}, {}
        else:
            targets = [_as_text(raw_answer)]
        pred_sents = _sentences(_as_text(processed.get("response")))
        # Splitting on "\n" first gives the same tokens as tokenizing the whole text:
        # "\n" is a separator and lower() maps characters one by one.
        pred_tokens = [tok for sent in pred_sents for tok in sent]
        per_target: list[tuple[_Score, _Score]] = []
        sizes: list[int] = []
        for target in targets:
            target_sents = _sentences(target)
            target_tokens = [tok for sent in target_sents for tok in sent]
            sizes.append(len(target_tokens))
            per_target.append(
                (
                    _score_l(target_tokens, pred_tokens),
                    _score_lsum(target_sents, pred_sents),
                )
            )
        # max() keeps the first of equal maxima, as numpy.argmax in score_multi does.
        best_l = max((pair[0] for pair in per_target), key=lambda s: s[2])
        best_lsum = max((pair[1] for pair in per_target), key=lambda s: s[2])
        out = dict(zip(_KEYS_L, best_l, strict=True))
        out.update(zip(_KEYS_LSUM, best_lsum, strict=True))
        scores = {k: float(v) for k, v in out.items()}
        if scores["rouge_l_f1"] >= 1.0:
            return scores, {}
        n_ref = sizes[[pair[0] for pair in per_target].index(best_l)]
        n_pred = len(pred_tokens)
        if not n_pred:
            return scores, {"reason": "the response has no token",
                            "reference_tokens": n_ref}
        common = round(best_l[1] * n_ref)  # recall = LCS / reference tokens
        return scores, {
            "reason": (f"the longest common subsequence has {common} tokens, of the "
                       f"reference's {n_ref} and the response's {n_pred} "
                       f"(ROUGE-L F1 {scores['rouge_l_f1']:.3g})"),
            "common_tokens": common,
            "reference_tokens": n_ref,
            "response_tokens": n_pred,
        }
