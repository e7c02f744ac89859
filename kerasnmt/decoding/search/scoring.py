"""The parts of a step's candidate scores: `</s>` forced or forbidden, the length and
coverage penalties (Wu et al., 2016), and the candidates worth scoring.

A candidate continues hypothesis `h` with word `w`; its score is

    (cum_log_prob(h) + log_prob(w | h)) / length_penalty_divisor(h)
    + coverage_penalty(h)   (only where it applies)

where the divisor is GNMT's `((5 + length) / 6) ** alpha` (OpenNMT-tf's) or `length **
alpha` (`length_normalization="power"`: fairseq's `--lenpen`, Marian's `--normalize`,
CTranslate2's `length_penalty`).

Every term but `log_prob(w | h)` is the same for the whole row of `h`, so a row's scores
rise with its logits and an example's best candidates are among the best logits of each
of its rows: only those are scored (`row_candidates`), and the vocabulary is read a few
times per row (maxima, then the sum of exponentials), instead of materializing
`[rows, V]` scores and ranking `beam_size * V` of them.

Examples:
    >>> import tensorflow as tf
    >>> # length 6 + the new token, and a finished hypothesis of length 7 (frozen):
    >>> # ((5 + 7) / 6) ** 1.0 = 2.0 for both.
    >>> divisor = length_penalty_divisor(tf.constant([6, 7]), tf.constant([False, True]),
    ...                                  length_penalty=1.0, freeze_finished_scores=True)
    >>> divisor.numpy().tolist()
    [[2.0], [2.0]]
    >>> # fairseq's --lenpen 1: the average log-probability per token, </s> counted.
    >>> length_penalty_divisor(tf.constant([6, 7]), tf.constant([False, True]),
    ...                        length_penalty=1.0, freeze_finished_scores=True,
    ...                        normalization="power").numpy().tolist()
    [[7.0], [7.0]]
"""

import tensorflow as tf

from kerasnmt.decoding.search.top_k_by_chunks import top_k_by_chunks

# OpenNMT-tf adds this to the </s> logit while `step < min_length`.
END_PENALTY_BEFORE_MIN_LENGTH = -1e7

# The </s> logit of a row that must end: this far above the others, </s> gets probability 1
# (the others' exponentials underflow to 0) without a pass over the rest of the row.
FORCED_END_LOGIT = 1e9
# The logit of an id that may never be chosen: the ids that pad the output layer to a
# multiple of the top-k's chunk, and those outside a shortlist.
EXCLUDED_LOGIT = -1e9

# The length penalty's divisor: GNMT's `((5 + length) / 6) ** alpha`, or `length ** alpha`.
LENGTH_NORMALIZATIONS = ("gnmt", "power")
# OpenNMT-tf's divisor: the default of the samplers, the search rules and the configuration.
DEFAULT_LENGTH_NORMALIZATION = "gnmt"


def check_length_normalization(normalization, owner):
    """Refuses a `length_normalization` not in `LENGTH_NORMALIZATIONS`, naming `owner`."""
    if normalization not in LENGTH_NORMALIZATIONS:
        raise ValueError(f"{owner}: length_normalization must be one of "
                         f"{LENGTH_NORMALIZATIONS}, got {normalization!r}")


def force_or_forbid_end(logits, step, finished, end_id, min_length):
    """Finished rows emit </s> with probability 1 (`FORCED_END_LOGIT`); before min_length
    </s> gets -1e7. Only the </s> column changes.

    `step` is the step of every row (a scalar) or of each row (`[rows]`); `end_id` -1 (no
    </s>, as a keras-hub sampler without a stop token) changes nothing."""
    column = tf.maximum(end_id, 0)
    end_logits = tf.gather(logits, column, axis=1)
    new_end_logits = tf.where(finished, FORCED_END_LOGIT, end_logits)
    if min_length != 0:
        new_end_logits = tf.where(step < min_length,
                                  end_logits + END_PENALTY_BEFORE_MIN_LENGTH, new_end_logits)
    return with_end_logits(logits, column, tf.where(end_id >= 0, new_end_logits, end_logits))


def with_end_logits(logits, end_id, end_logits):
    """`logits` `[rows, V]` with their </s> column replaced by `end_logits` `[rows]`."""
    return with_columns(logits, tf.reshape(tf.cast(end_id, tf.int32), [1]),
                        end_logits[:, tf.newaxis])


def with_columns(logits, columns, values):
    """`logits` `[rows, V]` with the columns `columns` (int32 `[C]`) replaced by `values`
    (`[rows, C]`): an update of those columns (in place under XLA), not a pass over every
    logit."""
    rows, columns = tf.meshgrid(tf.range(tf.shape(logits)[0]), columns, indexing="ij")
    indices = tf.stack([rows, columns], axis=-1)  # [rows, C, 2]
    return tf.tensor_scatter_nd_update(logits, indices, tf.cast(values, logits.dtype))


def length_penalty_divisor(lengths, finished, length_penalty, freeze_finished_scores,
                           normalization=DEFAULT_LENGTH_NORMALIZATION):
    """`((5 + length) / 6) ** length_penalty` (`normalization="gnmt"`) or `length **
    length_penalty` (`"power"`), `[rows, 1]` (1.0 when `length_penalty` is 0), where
    `length` counts the new token: OpenNMT-tf's `length + 1` also for finished rows,
    unless `freeze_finished_scores` keeps their own length."""
    if length_penalty == 0:
        return 1.0
    if freeze_finished_scores:
        lengths = tf.where(finished, lengths, lengths + 1)
    else:
        lengths = lengths + 1
    lengths = tf.cast(lengths[:, tf.newaxis], tf.float32)
    if normalization == "power":
        return tf.pow(lengths, length_penalty)
    return tf.pow((5.0 + lengths) / 6.0, length_penalty)


def coverage_penalty(accumulated_attention, weight):
    """`weight * sum_s log(min(accumulated_attention_s, 1))`, `[rows, 1]`; source positions
    never attended (0) count as 1, i.e. no penalty."""
    return weight * tf.reduce_sum(
        tf.math.log(tf.minimum(
            tf.where(tf.equal(accumulated_attention, 0.0), 1.0, accumulated_attention),
            1.0,
        )),
        axis=1,
        keepdims=True,
    )


def row_candidates(ranking_logits, logits, count):
    """The words of each row that can be chosen, `[rows, count]`, and their `logits`: the
    `count` best by `ranking_logits` (an increasing function of the row's scores), or all
    of them when `count` is 0 or at least the vocabulary size."""
    vocab_size = logits.shape[-1]
    if count == 0 or count >= vocab_size:
        word_ids = tf.broadcast_to(tf.range(vocab_size), tf.shape(logits))
        return word_ids, logits
    ranking_values, word_ids = top_k_by_chunks(ranking_logits, count)
    if ranking_logits is logits:
        return word_ids, ranking_values
    return word_ids, tf.gather(logits, word_ids, batch_dims=1)
