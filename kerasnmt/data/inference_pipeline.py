"""The inference `tf.data` pipeline: batches of similar lengths, outputs back in order.

As OpenNMT-tf's `inference_pipeline`: every example gets its position in the input as
`features["index"]`, examples are grouped into batches of similar source lengths (less
padding, faster decoding), and `in_original_order` puts the outputs back in input order
as soon as they can be, holding only the outputs that arrived early.
"""

import numpy as np
import tensorflow as tf

from kerasnmt.data.batching import BATCH_TYPES, bucket_batch_size
from kerasnmt.data.prefetching import prefetch_without_autotuning

AUTOTUNE = tf.data.AUTOTUNE


def inference_dataset(
    source,
    preprocessor,
    batch_size,
    batch_type="examples",
    length_bucket_width=5,
    num_parallel_calls=AUTOTUNE,
    prefetch_buffer_size=AUTOTUNE,
):
    """Batches source sentences for translation, grouped by length.

    Args:
        source: a text file (one sentence a line, `.gz` read compressed) or a
            `tf.data.Dataset` of string scalars.
        preprocessor: the model's `TranslationPreprocessor`, called on the source only.
        batch_size: examples, or tokens (`batch_type="tokens"`), per batch.
        batch_type: `"examples"` or `"tokens"`.
        length_bucket_width: batch together sentences whose lengths fall in the same
            bucket of this width (`ceil(length / width) - 1`; empty sentences go to the
            first); `None` or 0 keeps the input order (then batches are in order).
        num_parallel_calls: parallelism of the preprocessing map.
        prefetch_buffer_size: batches prepared ahead.

    Returns:
        A `tf.data.Dataset` of batched features (`"ids"`, `"length"`, ...) with an int64
        `"index"`, each example's 0-based position in `source`. Pass `features["index"]`
        with the outputs to `in_original_order`.

    Examples:
        >>> import tensorflow as tf
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> preprocessor = TranslationPreprocessor.whitespace(["<blank>", "<s>", "</s>", "a", "b"])
        >>> sentences = tf.data.Dataset.from_tensor_slices(["a b", "b", "b a", "a"])
        >>> batches = inference_dataset(sentences, preprocessor, batch_size=2, length_bucket_width=1)
        >>> [batch["index"].numpy().tolist() for batch in batches]
        [[0, 2], [1, 3]]
    """
    if batch_type not in BATCH_TYPES:
        raise ValueError(f"batch_type must be one of {BATCH_TYPES}, got {batch_type!r}")
    if isinstance(source, tf.data.Dataset):
        sentences = source
    else:
        compression = "GZIP" if str(source).endswith(".gz") else None
        sentences = tf.data.TextLineDataset(str(source), compression_type=compression)

    def _preprocess(index, sentence):
        features = dict(preprocessor(sentence))
        features["index"] = index
        return features

    examples = sentences.enumerate().map(_preprocess, num_parallel_calls=num_parallel_calls)
    if not length_bucket_width:
        if batch_type == "tokens":
            raise ValueError("batch_type='tokens' needs length_bucket_width")
        return prefetch_without_autotuning(examples.padded_batch(batch_size), prefetch_buffer_size)

    def _key(features):
        length = tf.cast(features["length"], tf.int64)
        return tf.maximum((length + length_bucket_width - 1) // length_bucket_width - 1, 0)

    def _batch(unused_key, window):
        return window.padded_batch(batch_size)

    if batch_type == "examples":
        batches = examples.group_by_window(_key, _batch, window_size=batch_size)
    else:
        batches = examples.group_by_window(
            _key,
            _batch,
            window_size_func=lambda key: bucket_batch_size(key, batch_size, length_bucket_width),
        )
    return prefetch_without_autotuning(batches, prefetch_buffer_size)


def in_original_order(batches):
    """Yields per-example outputs in input order from batches that arrive out of order.

    Args:
        batches: an iterable of `(indices, outputs)`: `indices` the batch's
            `features["index"]` (`[B]`), `outputs` a sequence (or array) of `B` outputs
            (e.g. translated strings).

    Yields:
        The outputs one example at a time, by increasing index, each as soon as all
        earlier ones have arrived.

    Raises:
        ValueError: when an index repeats or some index never arrives.

    Examples:
        >>> list(in_original_order([([2, 0], ["c", "a"]), ([1, 3], ["b", "d"])]))
        ['a', 'b', 'c', 'd']
    """
    waiting = {}
    next_index = 0
    for indices, outputs in batches:
        indices = np.asarray(indices).reshape(-1)
        if len(indices) != len(outputs):
            raise ValueError(f"got {len(indices)} indices for {len(outputs)} outputs")
        for index, output in zip(indices.tolist(), outputs):
            if index < next_index or index in waiting:
                raise ValueError(f"example index {index} arrived twice")
            waiting[index] = output
        while next_index in waiting:
            yield waiting.pop(next_index)
            next_index += 1
    if waiting:
        raise ValueError(
            f"example {next_index} never arrived (examples up to {max(waiting)} did)"
        )
