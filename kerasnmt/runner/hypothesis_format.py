"""The lines `kerasnmt translate` writes: OpenNMT-tf's `[SCORE ||| ]TEXT[ ||| ALIGNMENT]`."""

import numpy as np


def format_hypothesis(hypothesis, with_scores=False, with_alignments=None):
    """One output line, as OpenNMT-tf writes it: `[SCORE ||| ]TEXT[ ||| ALIGNMENT]`.

    `hard` alignments are Pharaoh pairs `source-target` of each target token's most
    attended source token; `soft` ones the attention vectors, one a target token,
    separated by ` ; `.

    Args:
        hypothesis: `{"text": str, "score": float[, "alignment": [target, source]]}`.
        with_scores: start with the score.
        with_alignments: None, `"hard"` or `"soft"`.

    Returns:
        The line, without its newline.

    Examples:
        >>> import numpy as np
        >>> hypothesis = {"text": "B A", "score": -0.5, "alignment": np.array([[0.2, 0.8], [0.9, 0.1]])}
        >>> format_hypothesis(hypothesis, with_scores=True, with_alignments="hard")
        '-0.500000 ||| B A ||| 1-0 0-1'
        >>> format_hypothesis(hypothesis, with_alignments="soft")
        'B A ||| 0.200000 0.800000 ; 0.900000 0.100000'
    """
    line = hypothesis["text"]
    if with_scores:
        line = f"{hypothesis['score']:.6f} ||| {line}"
    if with_alignments == "hard":
        alignment = hypothesis["alignment"]
        sources = np.argmax(alignment, axis=-1) if len(alignment) else []
        pairs = (f"{source}-{target}" for target, source in enumerate(sources))
        line = f"{line} ||| {' '.join(pairs)}"
    elif with_alignments == "soft":
        vectors = (" ".join(f"{value:.6f}" for value in row) for row in hypothesis["alignment"])
        line = f"{line} ||| {' ; '.join(vectors)}"
    return line
