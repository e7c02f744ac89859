"""Multi-head attention with Shaw et al. relative position representations: full sequence,
cached decoding step and cross-attention to a projected memory."""

import keras
import tensorflow as tf

from kerasnmt.layers.dropout import Dropout

# Added to masked logits (computed in float32) so that their softmax weight is exactly zero.
_MASKED_LOGIT = -1e9


@keras.saving.register_keras_serializable(package="kerasnmt")
class RelativeMultiHeadAttention(keras.layers.Layer):
    """Multi-head attention with relative position representations (Shaw et al., 2018).

    For self-attention with `maximum_relative_position=k`, the distance between query position
    `i` and key position `j` is clipped, `r = clip(j - i, -k, k) + k`, and indexes two learned
    tables `A_K` and `A_V` of shape `[2k + 1, key_dim]`, shared across heads:

        logits[i, j] = q_i · (K_j + A_K[r]) / sqrt(key_dim)
        outputs[i]   = sum_j softmax(logits)[i, j] · (V_j + A_V[r])

    as OpenNMT-tf computes it (the queries are scaled by `key_dim ** -0.5`, attention dropout
    is applied to the weights used for both terms). With `maximum_relative_position=None` it is
    plain multi-head attention, used for the decoder's attention over the encoder outputs.

    One method for each mode (as keras-hub's `CachedMultiHeadAttention` modes, one method
    each instead of one call's arguments):

    - `call`: a full sequence (training, the encoder, teacher forcing).
    - `call_with_cache`: decoder self-attention one position per row against a cache that
      the decoding code owns (`kerasnmt.decoding.BeamSegmentCache`): the new position's
      keys and values are written into it, earlier positions are never recomputed, and
      all shapes stay static (XLA).
    - `call_with_memory`: cross-attention against encoder keys and values projected once
      by `project_memory`.

    Cached keys and values are head-major, the layout of the attention products: a decoding
    step reads them without transposing them (about 3x faster steps than `[B, L, H, D]` on
    CPU).

    Args:
        num_heads: number of attention heads.
        key_dim: size of each head for queries, keys and values.
        maximum_relative_position: the clipping distance `k`, or `None` for no relative
            position representations.
        dropout: dropout rate on the attention weights (training only).
        use_bias: whether the four projections have biases.
        kernel_initializer: initializer of the projection kernels and the relative tables.
        bias_initializer: initializer of the projection biases.
        **kwargs: passed to `keras.layers.Layer` (e.g. `name`, `dtype`).

    Call arguments:
        query: `[B, T, D]` queries.
        value: `[B, S, D_v]` keys/values for cross-attention; `None` for self-attention.
        attention_mask: boolean, `[B, S]` (keys that may be attended, e.g. not padding) or
            `[B, T, S]`.
        use_causal_mask: forbid attending to later positions (decoder self-attention).
        training: enables dropout.
        return_attention_scores: also return the attention weights.

    Returns:
        `outputs` `[B, T, D]`, and the attention weights `[B, num_heads, T, S]` with
        `return_attention_scores`.

    Examples:
        >>> layer = RelativeMultiHeadAttention(num_heads=2, key_dim=3, maximum_relative_position=4)
        >>> layer(tf.random.normal([2, 5, 6])).shape
        TensorShape([2, 5, 6])

    Reference:
        [Shaw et al., 2018, Self-Attention with Relative Position Representations](https://arxiv.org/abs/1803.02155);
        [OpenNMT-tf `MultiHeadAttention`](https://github.com/OpenNMT/OpenNMT-tf/blob/master/opennmt/layers/transformer.py)
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        maximum_relative_position=None,
        dropout=0.0,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if maximum_relative_position is not None and maximum_relative_position < 1:
            raise ValueError(
                "RelativeMultiHeadAttention: maximum_relative_position must be a positive "
                f"integer or None, got {maximum_relative_position!r}"
            )
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.maximum_relative_position = maximum_relative_position
        self.dropout = dropout
        self.use_bias = use_bias
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_jit = True

        inner_dim = num_heads * key_dim
        self.query_dense = self._projection(inner_dim, "query")
        self.key_dense = self._projection(inner_dim, "key")
        self.value_dense = self._projection(inner_dim, "value")
        self.output_dense = None  # Its size is the query size, known in build().
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy)

    def _projection(self, units, name):
        return keras.layers.Dense(
            units,
            use_bias=self.use_bias,
            kernel_initializer=_clone_initializer(self.kernel_initializer),
            bias_initializer=_clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, query_shape, value_shape=None):
        if value_shape is None and isinstance(query_shape[0], (list, tuple)):
            # Called with the list of input shapes (e.g. by a wrapping model).
            query_shape, value_shape = query_shape[0], query_shape[1]
        if value_shape is None:
            value_shape = query_shape
        query_dim = query_shape[-1]
        inner_dim = self.num_heads * self.key_dim
        self.query_dense.build(query_shape)
        self.key_dense.build(value_shape)
        self.value_dense.build(value_shape)
        self.output_dense = self._projection(query_dim, "output")
        self.output_dense.build(tuple(query_shape[:-1]) + (inner_dim,))
        if self.maximum_relative_position is not None:
            window = 2 * self.maximum_relative_position + 1
            self.relative_position_keys = self.add_weight(
                name="relative_position_keys",
                shape=(window, self.key_dim),
                initializer=_clone_initializer(self.kernel_initializer),
            )
            self.relative_position_values = self.add_weight(
                name="relative_position_values",
                shape=(window, self.key_dim),
                initializer=_clone_initializer(self.kernel_initializer),
            )
        self.built = True

    def project_memory(self, value):
        """Projects encoder outputs once into the keys and values of `call_with_memory`.

        Args:
            value: `[B, S, D_v]` encoder outputs.

        Returns:
            `{"keys": ..., "values": ...}`, each `[B, num_heads, S, key_dim]`.

        Examples:
            >>> layer = RelativeMultiHeadAttention(num_heads=2, key_dim=3)
            >>> memory = layer.project_memory(tf.ones([2, 7, 6]))
            >>> memory["keys"].shape
            TensorShape([2, 2, 7, 3])
        """
        value = tf.cast(value, self.compute_dtype)
        if not self.built:
            self.build(value.shape, value.shape)
        return {
            "keys": tf.transpose(self._split_heads(self.key_dense(value)), [0, 2, 1, 3]),
            "values": tf.transpose(self._split_heads(self.value_dense(value)), [0, 2, 1, 3]),
        }

    def _split_heads(self, x):
        """`[B, T, H * D]` -> `[B, T, H, D]`, and `[B, H * D]` (one position per row) ->
        `[B, 1, H, D]`. A static `T` is written into the shape: a graph traced per
        decoding step (an export traces a dozen) then holds 2 ops here instead of 13."""
        length = 1 if x.shape.rank == 2 else _dimension(x, 1)
        # -1 cannot stand for the batch of an empty tensor with a length of 0.
        batch = -1 if isinstance(length, int) and length else tf.shape(x)[0]
        return tf.reshape(x, [batch, length, self.num_heads, self.key_dim])

    def call(
        self,
        query,
        value=None,
        attention_mask=None,
        use_causal_mask=False,
        training=None,
        return_attention_scores=False,
    ):
        if query.shape.rank == 2:
            raise ValueError(
                "RelativeMultiHeadAttention: a query of shape [B, D] (one position per row) "
                "needs a cache: call_with_cache (self-attention) or call_with_memory"
            )
        if self.maximum_relative_position is not None and value is not None:
            raise ValueError(
                "RelativeMultiHeadAttention: relative position representations only apply to "
                "self-attention; call it without `value`, or set maximum_relative_position=None"
            )
        query = tf.cast(query, self.compute_dtype)
        queries = self._queries(query)
        query_shape = tf.shape(queries)
        source = query if value is None else tf.cast(value, self.compute_dtype)
        # Head-major [B, H, S, D] for batched matrix products (on CPU, forward and backward
        # take a fifth less time than tf.einsum's, which transposes its operands at each call).
        keys = tf.transpose(self._split_heads(self.key_dense(source)), [0, 2, 1, 3])
        values = tf.transpose(self._split_heads(self.value_dense(source)), [0, 2, 1, 3])
        key_positions = tf.range(_dimension(keys, 2))
        query_positions = tf.range(_dimension(queries, 1))

        logits = tf.matmul(tf.transpose(queries, [0, 2, 1, 3]), keys, transpose_b=True)
        if self.maximum_relative_position is not None:
            bucket_one_hot = self._relative_buckets(key_positions, query_positions,
                                                    logits.dtype)  # [T, S, 2k+1]
            logits += _relative_logits(queries, self.relative_position_keys, bucket_one_hot)
        mask = _key_mask(attention_mask)
        if use_causal_mask:
            causal = key_positions <= query_positions[..., tf.newaxis]
            mask = causal if mask is None else tf.logical_and(mask, causal)
        weights = self._softmax(logits, mask)
        dropped_weights = self.dropout_layer(weights, training=training)

        heads = tf.transpose(tf.matmul(dropped_weights, values), [0, 2, 1, 3])
        if self.maximum_relative_position is not None:
            heads += _relative_heads(dropped_weights, self.relative_position_values,
                                     bucket_one_hot)
        heads = tf.reshape(heads, [query_shape[0], query_shape[1], self.num_heads * self.key_dim])
        outputs = self.output_dense(heads)
        return (outputs, weights) if return_attention_scores else outputs

    def call_with_cache(self, query, cache, step):
        """Causal self-attention of one new position per row against a decoding cache
        (inference: no dropout).

        The keys and values of the new position are written into `cache` at `step`, and
        each row attends to the positions `<= step` its cache holds for it. The cache is the
        decoding code's (`kerasnmt.decoding.BeamSegmentCache`, whose `beam_size` rows of an
        example share its step); this layer needs only its `write`, `key_positions`,
        `deepest_step`, `logits` and `heads`.

        Args:
            query: `[B, D]`, one position per row (or `[B, 1, D]`).
            cache: the decoding cache of this layer.
            step: int, the position of the queries: a scalar, or `[B_c]` for the `B_c`
                examples of the cache (each at its own position).

        Returns:
            `(outputs, new_cache)`: outputs `[B, D]` (or `[B, 1, D]`, as the query).

        Examples:
            >>> from kerasnmt.decoding import BeamSegmentCache
            >>> layer = RelativeMultiHeadAttention(num_heads=2, key_dim=3,
            ...                                    maximum_relative_position=4)
            >>> cache = BeamSegmentCache.zeros(batch_size=2, max_length=10, beam_size=1,
            ...                                num_heads=2, key_dim=3)
            >>> outputs, cache = layer.call_with_cache(tf.ones([2, 6]), cache, step=0)
            >>> outputs.shape
            TensorShape([2, 6])
        """
        query = tf.cast(query, self.compute_dtype)
        one_position = query.shape.rank == 2
        if not one_position and query.shape[1] not in (None, 1):
            raise ValueError(
                "RelativeMultiHeadAttention: call_with_cache takes one query position per "
                f"row, got query shape {query.shape}"
            )
        if not self.built:
            self.build(query.shape)
        queries = self._queries(query)
        query_shape = tf.shape(queries)
        cache = cache.write(self._split_heads(self.key_dense(query)),
                            self._split_heads(self.value_dense(query)), step)
        key_positions = cache.key_positions()
        newest = cache.deepest_step(step)  # the cache may skip what lies after it
        # The query positions: [1], or [rows, 1] when each example has its own step.
        per_row = tf.convert_to_tensor(step).shape.rank == 1
        if per_row:
            rows_per_example = query_shape[0] // tf.shape(step)[0]
            row_steps = tf.repeat(tf.cast(step, tf.int32), rows_per_example)
            query_positions = row_steps[:, tf.newaxis] + tf.range(_dimension(queries, 1))
        else:
            query_positions = step + tf.range(_dimension(queries, 1))

        logits = cache.logits(queries, newest)
        if self.maximum_relative_position is not None:
            # [T, S, 2k+1], or [rows, T, S, 2k+1] with a position per row.
            bucket_one_hot = self._relative_buckets(key_positions, query_positions,
                                                    logits.dtype)
            relative = "btsr" if per_row else "tsr"
            query_dot_table = tf.einsum("bthd,rd->bhtr", queries,
                                        self._relative_table(self.relative_position_keys))
            logits += tf.einsum(f"bhtr,{relative}->bhts", query_dot_table, bucket_one_hot)
        causal = key_positions <= query_positions[..., tf.newaxis]
        if per_row:
            causal = causal[:, tf.newaxis]  # [rows, 1 (heads), T, S]
        weights = self._softmax(logits, causal)

        heads = cache.heads(weights, newest)
        if self.maximum_relative_position is not None:
            weight_per_bucket = tf.einsum(f"bhts,{relative}->bhtr", weights, bucket_one_hot)
            heads += tf.einsum("bhtr,rd->bthd", weight_per_bucket,
                               self._relative_table(self.relative_position_values))
        if one_position:
            heads = tf.reshape(heads, [-1, self.num_heads * self.key_dim])
        else:
            heads = tf.reshape(heads, [query_shape[0], query_shape[1],
                                       self.num_heads * self.key_dim])
        return self.output_dense(heads), cache

    def call_with_memory(self, query, memory, attention_mask=None):
        """Cross-attention against encoder keys and values projected once by
        `project_memory` (inference: no dropout).

        The memory need not be tiled per beam hypothesis: with `B` memory examples and
        `B * K` query rows, rows `b * K` to `b * K + K - 1` attend to example `b` (one
        product per example and head; `attention_mask` then has `B` rows too).

        Args:
            query: `[B * K, D]`, one position per row, or `[B * K, T, D]`.
            memory: `{"keys", "values"}` from `project_memory`, `[B, num_heads, S, key_dim]`.
            attention_mask: boolean `[B, S]`, the memory positions that may be attended.

        Returns:
            `(outputs, attention_scores)`: outputs `[B * K, D]` (or `[B * K, T, D]`, as the
            query) and the attention weights `[B * K, num_heads, T, S]`.

        Examples:
            >>> layer = RelativeMultiHeadAttention(num_heads=2, key_dim=3)
            >>> memory = layer.project_memory(tf.ones([2, 7, 6]))
            >>> outputs, scores = layer.call_with_memory(tf.ones([4, 6]), memory)
            >>> outputs.shape, scores.shape  # 2 rows an example
            (TensorShape([4, 6]), TensorShape([4, 2, 1, 7]))
        """
        if self.maximum_relative_position is not None:
            raise ValueError(
                "RelativeMultiHeadAttention: relative position representations only apply to "
                "self-attention; call_with_memory needs maximum_relative_position=None"
            )
        query = tf.cast(query, self.compute_dtype)
        one_position = query.shape.rank == 2
        queries = self._queries(query)
        query_shape = tf.shape(queries)
        query_length = _dimension(queries, 1)
        keys, values = memory["keys"], memory["values"]
        # Consecutive query rows that share a memory example (beam hypotheses, when the
        # memory is not tiled per hypothesis) are attended as its positions.
        queries = tf.reshape(queries, [tf.shape(keys)[0], -1, self.num_heads, self.key_dim])
        logits = tf.einsum("bthd,bhsd->bhts", queries, keys)
        weights = self._softmax(logits, _key_mask(attention_mask))
        heads = tf.einsum("bhts,bhsd->bthd", weights, values)
        if one_position:
            heads = tf.reshape(heads, [-1, self.num_heads * self.key_dim])
        else:
            heads = tf.reshape(heads, [query_shape[0], query_shape[1],
                                       self.num_heads * self.key_dim])
        outputs = self.output_dense(heads)
        # [B, H, K*T, S] -> [B*K, H, T, S]
        source_width = _dimension(weights, 3)
        weights = tf.reshape(weights, [tf.shape(weights)[0], self.num_heads, -1,
                                       query_length, source_width])
        weights = tf.reshape(tf.transpose(weights, [0, 2, 1, 3, 4]),
                             [-1, self.num_heads, query_length, source_width])
        return outputs, weights

    def _queries(self, query):
        """The scaled query heads `[B, T, H, D]` of `query` (in the compute dtype)."""
        return self._split_heads(self.query_dense(query)) * (self.key_dim**-0.5)

    def _relative_buckets(self, key_positions, query_positions, dtype):
        """The one-hot relative position bucket `[..., T, S, 2k + 1]` of each query and key
        position."""
        k = self.maximum_relative_position
        distance = key_positions - query_positions[..., tf.newaxis]
        bucket = tf.clip_by_value(distance, -k, k) + k
        return tf.one_hot(bucket, 2 * k + 1, dtype=dtype)

    def _relative_table(self, table):
        """`table` in the compute dtype: the cached and memory modes are called directly,
        outside the autocasting of `keras.layers.Layer.__call__` (no op in float32)."""
        return tf.cast(table, self.compute_dtype)

    def _softmax(self, logits, mask):
        """The attention weights, computed in float32 with the masked positions at weight
        0, in the compute dtype."""
        logits = tf.cast(logits, tf.float32)
        if mask is not None:
            logits = tf.where(mask, logits, _MASKED_LOGIT)
        return tf.cast(tf.nn.softmax(logits, axis=-1), self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            key_dim=self.key_dim,
            maximum_relative_position=self.maximum_relative_position,
            dropout=self.dropout,
            use_bias=self.use_bias,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            bias_initializer=keras.initializers.serialize(self.bias_initializer),
        )
        return config


def _dimension(tensor, axis):
    """The size of `tensor` along `axis`: a Python int when static (the graph then holds
    no op to read it), else an int32 scalar. (`keras.ops.shape(tensor)[axis]` gives the
    same value but slices every unknown dimension of `tensor`, used or not: 5% more ops in
    an export's decoding steps.)"""
    size = tensor.shape[axis]
    return tf.shape(tensor)[axis] if size is None else size


def _relative_logits(queries, table, bucket_one_hot):
    """`sum_d queries[b, t, h, d] * table[bucket(t, s), d]` `[B, H, T, S]`, from queries
    `[B, T, H, D]`, a relative table `[R, D]` and the buckets one-hot `[T, S, R]`: one
    product with the table, then one batched product per query position."""
    shape = tf.shape(queries)
    batch, length, heads = shape[0], shape[1], shape[2]
    dot_table = tf.matmul(tf.reshape(queries, [-1, shape[3]]), table, transpose_b=True)
    dot_table = tf.reshape(tf.transpose(tf.reshape(dot_table, [batch, length, heads, -1]),
                                        [1, 0, 2, 3]), [length, batch * heads, -1])
    logits = tf.matmul(dot_table, bucket_one_hot, transpose_b=True)  # [T, B*H, S]
    return tf.transpose(tf.reshape(logits, [length, batch, heads, -1]), [1, 2, 0, 3])


def _relative_heads(weights, table, bucket_one_hot):
    """`sum_s weights[b, h, t, s] * table[bucket(t, s)]` `[B, T, H, D]`, from weights
    `[B, H, T, S]`, a relative table `[R, D]` and the buckets one-hot `[T, S, R]`."""
    shape = tf.shape(weights)
    batch, heads, length = shape[0], shape[1], shape[2]
    per_position = tf.reshape(tf.transpose(weights, [2, 0, 1, 3]), [length, batch * heads, -1])
    weight_per_bucket = tf.matmul(per_position, bucket_one_hot)  # [T, B*H, R]
    outputs = tf.matmul(tf.reshape(weight_per_bucket, [-1, tf.shape(table)[0]]), table)
    return tf.transpose(tf.reshape(outputs, [length, batch, heads, -1]), [1, 0, 2, 3])


def _key_mask(attention_mask):
    """A boolean `attention_mask` `[B, S]` or `[B, T, S]` as `[B, 1, 1 or T, S]` (heads
    and queries broadcast), or `None`."""
    if attention_mask is None:
        return None
    mask = tf.cast(attention_mask, tf.bool)
    if mask.shape.rank == 2:
        return mask[:, tf.newaxis, tf.newaxis, :]
    return mask[:, tf.newaxis, :, :]


def _clone_initializer(initializer):
    """A fresh copy, so that no two weights share one initializer instance."""
    return initializer.__class__.from_config(initializer.get_config())
