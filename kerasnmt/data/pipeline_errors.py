"""Bad input found inside TensorFlow's runtime, turned back into a one-line `CorpusError`.

kerasnmt's pipelines and layers check their input with `tf.debugging.Assert` (a length
filter that leaves no batch, a malformed or out-of-range alignment line, ...). Such a
check fails inside the runtime, which raises `tf.errors.InvalidArgumentError` with the
message wrapped in its own decoration (the node, the iterator, "Graph execution error");
`corpus_error` recovers the message, so that the command line reports bad input the same
way wherever it was found: one line, exit status 2.
"""

from kerasnmt.data.text_files import CorpusError

_MARK = "assertion failed: ["


def corpus_error(error):
    """The `CorpusError` of a failed `tf.debugging.Assert`, or None for another error.

    Args:
        error: a `tf.errors.InvalidArgumentError` (any exception is accepted).

    Returns:
        A `CorpusError` with the check's own message, or None when `error` does not come
        from a failed check (a bug, not bad input: let it propagate).

    Examples:
        >>> import tensorflow as tf
        >>> def check(x):
        ...     tf.debugging.Assert(x < 2, ["data.txt, line 3: expected at most 2 tokens"])
        ...     return x
        >>> try:
        ...     list(tf.data.Dataset.range(3).map(check))
        ... except tf.errors.InvalidArgumentError as error:
        ...     print(corpus_error(error))
        data.txt, line 3: expected at most 2 tokens
        >>> print(corpus_error(ValueError("something else")))
        None
    """
    message = getattr(error, "message", str(error))
    if _MARK not in message:
        return None
    message = message.split(_MARK, 1)[1].split("]\n", 1)[0].rstrip("]")
    return CorpusError(message.strip())
