"""Batches planned from example lengths alone: sort a window by length, cut, shuffle.

The sampler of a dataset/sampler/collate split (a dataset gives examples by index, a
sampler orders their indices into batches from metadata such as lengths, a collate step
pads each batch's examples into tensors): it sees only each example's source and target
token counts (before `<s>`/`</s>`) and returns
batches of indices; reading and padding the examples is someone else's work
(`kerasnmt.data.shard_batches`). Lengths are counted as the text pipeline counts them
(`kerasnmt.data.batching`): a source in tokens, a target in tokens plus its end mark
`</s>` (`counted_target_length`, OpenNMT-tf's rule). Within a window of examples:

1. drop the examples outside `0 < length <= maximum` (as `filter_examples_by_length`);
2. order them by `example_length` (the longer of the source and the counted target),
   then source, then target length, ties in a random order (fairseq's `batch_by_size` on
   a sorted window);
3. cut consecutive batches: with `batch_type="tokens"` a batch takes examples while
   `count * longest <= batch_size` (`longest` the largest `example_length`, rounded up
   to the bucket boundary with `pad_to_bucket_boundary`: the tokens a padded batch
   holds, OpenNMT-tf's measure), and its size is rounded down to a multiple of
   `batch_size_multiple` (never below it); with `"examples"` a batch holds `batch_size`;
4. shuffle the order of the batches.

Sorting a whole window rather than bucketing by one length keeps padding small on both
sides, and planning from lengths makes every epoch's batches known in advance, so a run
can resume at a batch index.
"""

import numpy as np

from kerasnmt.data.batching import check_batch_size, counted_target_length, example_length


def kept_examples(lengths, maximum_features_length=None, maximum_labels_length=None):
    """The indices of the examples with `0 < length <= maximum` on both sides.

    `lengths` holds token counts; a target's length is `counted_target_length` (its
    tokens and `</s>`), so an empty target is kept and `maximum_labels_length=8` keeps
    targets of up to 7 tokens.

    Examples:
        >>> kept_examples(np.array([[3, 7], [0, 4], [5, 8], [2, 0]]), maximum_labels_length=8)
        array([0, 3])
    """
    source, target = lengths[:, 0], counted_target_length(lengths[:, 1])
    keep = (source > 0) & (target > 0)
    if maximum_features_length is not None:
        keep &= source <= maximum_features_length
    if maximum_labels_length is not None:
        keep &= target <= maximum_labels_length
    return np.flatnonzero(keep)


def padded_length(length, length_bucket_width=None):
    """`length` rounded up to a multiple of `length_bucket_width` (unchanged for `None`).

    Examples:
        >>> padded_length(np.array([1, 8, 9]), 8).tolist()
        [8, 8, 16]
    """
    if length_bucket_width is None:
        return length
    return -(-length // length_bucket_width) * length_bucket_width


def plan_batches(
    lengths,
    batch_size,
    batch_type="tokens",
    batch_size_multiple=1,
    length_bucket_width=None,
    rng=None,
):
    """Cuts one window of examples into batches by length.

    Args:
        lengths: `[n, 2]` source and target token counts of the window's examples,
            already filtered (`kept_examples`).
        batch_size: the token budget of a batch (`"tokens"`) or its number of examples.
        batch_type: `"tokens"` or `"examples"`.
        batch_size_multiple: full batches hold a multiple of this many examples.
        length_bucket_width: with `pad_to_bucket_boundary`, the bucket width: a batch is
            padded to its longest length rounded up to a multiple of it, and counted so.
        rng: a `numpy.random.Generator` that breaks length ties and shuffles the batch
            order; `None` keeps ties in window order and the batches in length order.

    Returns:
        A list of int arrays, the indices (into `lengths`) of each batch.

    Examples:
        >>> lengths = np.array([[4, 3], [1, 1], [4, 4], [2, 1], [1, 2], [3, 3]])
        >>> [batch.tolist() for batch in plan_batches(lengths, batch_size=8)]
        [[1, 3], [4, 5], [0], [2]]
        >>> [batch.tolist() for batch in plan_batches(lengths, batch_size=2, batch_type="examples")]
        [[1, 3], [4, 5], [0, 2]]
    """
    check_batch_size(batch_size, batch_type, batch_size_multiple)
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1, 2)
    longest = padded_length(example_length(lengths[:, 0], lengths[:, 1]), length_bucket_width)
    order = np.arange(len(lengths)) if rng is None else rng.permutation(len(lengths))
    # np.lexsort sorts by its last key first; it is stable, so ties keep `order`.
    order = order[np.lexsort((lengths[order, 1], lengths[order, 0], longest[order]))]
    batches = []
    start = 0
    while start < len(order):
        if batch_type == "examples":
            size = batch_size
        else:
            # Sorted ascending, so the first `c` examples make `c * longest[c-th]` tokens;
            # a batch never holds more than `batch_size` examples (lengths are >= 1).
            candidates = longest[order[start : start + batch_size + 1]]
            overflow = np.flatnonzero(np.arange(1, len(candidates) + 1) * candidates > batch_size)
            size = overflow[0] if len(overflow) else len(candidates)
            size = max(size // batch_size_multiple * batch_size_multiple, batch_size_multiple)
        batches.append(order[start : start + size])
        start += size
    if rng is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def padding_fraction(lengths, batches, length_bucket_width=None):
    """The share of padded positions in `batches`, source and target together (targets
    counted with `</s>`, the `ids_out` a batch holds; with `length_bucket_width`, both
    padded to the batch's longest `example_length` rounded up to the bucket boundary).

    Examples:
        >>> lengths = np.array([[4, 3], [2, 3]])
        >>> padding_fraction(lengths, [np.array([0, 1])])  # 2 padded of 8 + 8 positions
        0.125
    """
    padded = real = 0
    for batch in batches:
        source, target = lengths[batch, 0], counted_target_length(lengths[batch, 1])
        if length_bucket_width is None:
            width = source.max() + target.max()
        else:
            width = 2 * padded_length(max(source.max(), target.max()), length_bucket_width)
        padded += len(batch) * width
        real += source.sum() + target.sum()
    return float(1 - real / padded) if padded else 0.0
