"""Batches of sentences translated by an exported SavedModel, through its signatures."""


import numpy as np
import tensorflow as tf

from kerasnmt.export.saved_model_directory import check_saved_model_directory


class SavedModelTranslator:
    """Translates batches with an exported SavedModel (`kerasnmt export`).

    What the export provides is read from its signatures' outputs: more hypotheses than
    it was exported with, or alignments it was exported without, are refused before
    anything is read or decoded. Each call's counts of unknown source tokens are kept in
    `unknown_source_tokens` (None for an export whose signatures do not return them).

    Args:
        path: the SavedModel directory.
        n_best: hypotheses returned a sentence.
        with_alignments: return each hypothesis' attention alignment.

    Call arguments:
        sentences: a list of raw source sentences.

    Returns:
        A list of n-best lists of hypotheses (`text`, `score`[, `alignment`]), one a
        sentence.

    Raises:
        OSError: `path` is not a complete SavedModel directory.
        ValueError: the export cannot give `n_best` hypotheses or the alignments.

    Examples:
        >>> import tempfile
        >>> SavedModelTranslator(tempfile.mkdtemp(), n_best=1, with_alignments=False)
        Traceback (most recent call last):
        ...
        OSError: ...: not a SavedModel directory (no saved_model.pb)
    """

    def __init__(self, path, n_best, with_alignments):
        check_saved_model_directory(path)
        model = tf.saved_model.load(path)
        self.n_best_signature = n_best > 1 or with_alignments
        self.signature = model.signatures["n_best" if self.n_best_signature else "serving_default"]
        self.n_best = n_best
        self.with_alignments = with_alignments
        outputs = self.signature.structured_outputs
        # Each translated sentence's count of unknown source tokens, in translation order;
        # exports written before the signatures returned it give none.
        self.unknown_source_tokens = [] if "unknown_source_tokens" in outputs else None
        available = outputs["translations"].shape[1] if self.n_best_signature else 1
        if available < n_best:
            raise ValueError(
                f"{path} returns {available} hypotheses a sentence (exported with "
                f"n_best={available}): export it again with --n-best {n_best}"
            )
        if with_alignments and "alignments" not in outputs:
            raise ValueError(f"{path} was exported without alignments: export it again "
                             "with --with-alignments")

    def __call__(self, sentences):
        outputs = self.signature(source=tf.constant(sentences, tf.string))
        if self.unknown_source_tokens is not None:
            self.unknown_source_tokens.append(outputs["unknown_source_tokens"].numpy())
        if not self.n_best_signature:
            return [[{"text": text.decode("utf-8"), "score": float(score)}] for text, score in
                    zip(outputs["translation"].numpy(), outputs["score"].numpy())]
        texts, scores = outputs["translations"].numpy(), outputs["scores"].numpy()
        alignments = outputs["alignments"].numpy() if self.with_alignments else None
        results = []
        for i in range(len(sentences)):
            n_best = [{"text": texts[i, k].decode("utf-8"), "score": float(scores[i, k])}
                      for k in range(self.n_best)]
            if alignments is not None:
                for hypothesis, alignment in zip(n_best, _unpadded_alignments(alignments[i])):
                    hypothesis["alignment"] = alignment
            results.append(n_best)
        return results


def _unpadded_alignments(alignments):
    """Each hypothesis' `[target tokens, source tokens]` rows of a sentence's zero-padded
    `[n, T, S]` alignments (a token's row is a distribution; padding is zeros)."""
    used = np.flatnonzero(alignments.max(axis=(0, 1)) > 0)
    columns = int(used[-1]) + 1 if len(used) else 0
    rows = np.sum(alignments.sum(axis=-1) > 0.5, axis=-1)
    return [alignment[:count, :columns] for alignment, count in zip(alignments, rows)]
