"""Source tokens the source vocabulary lacks: counted while a file is translated, and
reported in one line, since they are translated as `<unk>` and lost silently otherwise.

Examples:
    >>> import contextlib, io, types
    >>> from kerasnmt.layers import TranslationPreprocessor
    >>> translator = types.SimpleNamespace(
    ...     preprocessor=TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"]))
    >>> unknown = count_unknown_source_tokens(translator, ["a b", "a zz b yy"], block=1)
    >>> unknown.tolist()
    [0, 2]
    >>> with contextlib.redirect_stderr(io.StringIO()) as stderr:
    ...     report_unknown_source_tokens(unknown, translator)
    >>> print(stderr.getvalue(), end="")
    kerasnmt translate: warning: 2 source tokens in 1 of 2 sentences were not in the source vocabulary and read as <unk>
"""

import sys

import numpy as np

from kerasnmt.decoding.source import unknown_source_tokens
from kerasnmt.layers import SentencePieceTokenizer


def count_unknown_source_tokens(translator, sentences, block=1024):
    """Each sentence's count of tokens the source vocabulary lacks (in blocks, to bound
    memory)."""
    counts = [unknown_source_tokens(translator.preprocessor, sentences[start:start + block])
              for start in range(0, len(sentences), block)]
    return np.concatenate(counts) if counts else np.zeros([0], np.int64)


def report_unknown_source_tokens(unknown, translator):
    """One line on stderr when source tokens were unknown (`unknown`: the counts, or
    None; `translator`: the `Translator`, None for a SavedModel)."""
    if unknown is None or not unknown.any():
        return
    tokens, sentences = int(unknown.sum()), int(np.count_nonzero(unknown))
    hint = ""
    # A SavedModel's tokenizer is in its graph (`translator` is None): no hint then.
    tokenizer = translator.preprocessor.source_tokenizer if translator else None
    if isinstance(tokenizer, SentencePieceTokenizer) and not tokenizer.byte_fallback:
        hint = ("; a SentencePiece vocabulary with byte fallback (kerasnmt build-vocab "
                "--sentencepiece, without --no-byte-fallback) spells unseen characters in "
                "bytes instead")
    print(f"kerasnmt translate: warning: {tokens} source token{'s' * (tokens != 1)} in "
          f"{sentences} of {len(unknown)} sentence{'s' * (len(unknown) != 1)} "
          f"{'were' if tokens != 1 else 'was'} not in the source vocabulary and read as "
          f"<unk>{hint}", file=sys.stderr)
