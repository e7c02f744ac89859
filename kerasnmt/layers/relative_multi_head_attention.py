"""Multi-head attention with Shaw et al. relative position representations and a decoding cache."""

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

    Incremental decoding: `initial_cache(batch_size, max_length)` gives zero keys and values
    `[B, num_heads, max_length, key_dim]`; each call with `cache` and `step` writes the keys and
    values of the one new query position at `step` (a scatter of that position only) and
    attends to positions `<= step` only, so a decoding step never recomputes earlier positions
    and all shapes stay static (XLA). For cross-attention, `project_memory(value)` projects the
    encoder outputs once; pass the result as `cache` (without `step`) at every step. The
    memory need not be tiled per beam hypothesis: with `B` memory examples and `B * K`
    query rows, rows `b * K` to `b * K + K - 1` attend to example `b` (one product per
    example and head; `attention_mask` then has `B` rows too). Cached
    keys and values are head-major, the layout of the attention products: a decoding step
    reads them without transposing them (about 3x faster steps than `[B, L, H, D]` on CPU).

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
        query: `[B, T, D]` queries; with a cache, `[B, D]` for one position per row
            (as `[B, 1, D]`, the outputs `[B, D]`: what decoding steps pass).
        value: `[B, S, D_v]` keys/values for cross-attention; `None` for self-attention.
        attention_mask: boolean, `[B, S]` (keys that may be attended, e.g. not padding) or
            `[B, T, S]`.
        use_causal_mask: forbid attending to later positions (decoder self-attention).
        cache: incremental self-attention state from `initial_cache` or a beam cache
            (`kerasnmt.decoding.BeamSegmentCache`), with `step`; or projected encoder
            keys/values from `project_memory` (without `step`).
        step: int, the position of the one query when decoding with a self-attention
            cache (`T` must be 1): a scalar, or `[B_c]` for the `B_c` examples of the cache
            (each example at its own position; with a beam cache, its `beam_size` rows
            share it).
        training: enables dropout.
        return_attention_scores: also return the attention weights.

    Returns:
        `outputs` `[B, T, D]`; then the updated `cache` when a cache is given; then the
        attention weights `[B, num_heads, T, S]` when `return_attention_scores`.

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

    def initial_cache(self, batch_size, max_length):
        """Zero keys and values for incremental self-attention.

        Args:
            batch_size: the batch size `B`.
            max_length: the number of positions the cache holds.

        Returns:
            `{"keys": ..., "values": ...}`, each `[B, num_heads, max_length, key_dim]`.
        """
        shape = [batch_size, self.num_heads, max_length, self.key_dim]
        zeros = tf.zeros(shape, dtype=self.compute_dtype)
        return {"keys": zeros, "values": zeros}

    def project_memory(self, value):
        """Projects encoder outputs `[B, S, D_v]` once into cross-attention keys and values.

        Returns:
            `{"keys": ..., "values": ...}`, each `[B, num_heads, S, key_dim]`.
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
        cache=None,
        step=None,
        training=None,
        return_attention_scores=False,
    ):
        incremental = cache is not None and step is not None
        beam_cache = incremental and not isinstance(cache, dict)
        uses_memory_cache = cache is not None and step is None
        is_self_attention = value is None and not uses_memory_cache
        if self.maximum_relative_position is not None and not is_self_attention:
            raise ValueError(
                "RelativeMultiHeadAttention: relative position representations only apply to "
                "self-attention; call it without `value` and without a memory `cache`, or set "
                "maximum_relative_position=None"
            )
        one_position = query.shape.rank == 2  # [B, D]: one position per row
        if one_position and cache is None:
            raise ValueError(
                "RelativeMultiHeadAttention: a query of shape [B, D] (one position per row) "
                "needs a cache: a self-attention cache with `step`, or a memory cache"
            )
        if incremental and not one_position and query.shape[1] not in (None, 1):
            raise ValueError(
                "RelativeMultiHeadAttention: incremental decoding (cache with step) takes one "
                f"query position, got query shape {query.shape}"
            )

        query = tf.cast(query, self.compute_dtype)
        queries = self._split_heads(self.query_dense(query)) * (self.key_dim**-0.5)
        query_shape = tf.shape(queries)
        query_length = _dimension(queries, 1)
        if uses_memory_cache:
            keys, values = cache["keys"], cache["values"]
            # Consecutive query rows that share a memory example (beam hypotheses, when
            # the memory is not tiled per hypothesis) are attended as its positions.
            queries = tf.reshape(queries, [tf.shape(keys)[0], -1, self.num_heads,
                                           self.key_dim])
        else:
            source = query if value is None else tf.cast(value, self.compute_dtype)
            keys = self._split_heads(self.key_dense(source))
            values = self._split_heads(self.value_dense(source))
            if beam_cache:
                cache = cache.write(keys, values, step)
                keys, values = cache.keys, cache.values
            elif incremental:
                keys = _write_at(cache["keys"], keys, step)
                values = _write_at(cache["values"], values, step)
                cache = {"keys": keys, "values": values}
        # Cached keys and values are head-major [B, H, S, D]; others [B, S, H, D], made
        # head-major here for batched matrix products (on CPU, forward and backward take
        # a fifth less time than tf.einsum's, which transposes its operands at each call).
        full_sequence = cache is None
        if full_sequence:
            keys = tf.transpose(keys, [0, 2, 1, 3])
            values = tf.transpose(values, [0, 2, 1, 3])
        if beam_cache:
            key_positions = cache.key_positions()
            newest = cache.deepest_step(step)  # the segments after it are not read
        else:
            key_positions = tf.range(_dimension(keys, 2))
        # The query positions: [T], or [rows, T] when each example has its own step.
        per_row = incremental and tf.convert_to_tensor(step).shape.rank == 1
        if per_row:
            rows_per_example = query_shape[0] // tf.shape(step)[0]
            row_steps = tf.repeat(tf.cast(step, tf.int32), rows_per_example)
            query_positions = row_steps[:, tf.newaxis] + tf.range(query_length)
        else:
            query_positions = (step if incremental else 0) + tf.range(query_length)

        if beam_cache:
            logits = cache.logits(queries, newest)
        elif full_sequence:
            logits = tf.matmul(tf.transpose(queries, [0, 2, 1, 3]), keys, transpose_b=True)
        else:
            logits = tf.einsum("bthd,bhsd->bhts", queries, keys)
        if self.maximum_relative_position is not None:
            window = 2 * self.maximum_relative_position + 1
            distance = key_positions - query_positions[..., tf.newaxis]
            bucket = (
                tf.clip_by_value(
                    distance, -self.maximum_relative_position, self.maximum_relative_position
                )
                + self.maximum_relative_position
            )
            # [T, S, 2k+1], or [rows, T, S, 2k+1] with a position per row.
            bucket_one_hot = tf.one_hot(bucket, window, dtype=logits.dtype)
            relative = "btsr" if per_row else "tsr"
            if full_sequence:
                logits += _relative_logits(queries, self.relative_position_keys, bucket_one_hot)
            else:
                query_dot_table = tf.einsum("bthd,rd->bhtr", queries,
                                            self.relative_position_keys)
                logits += tf.einsum(f"bhtr,{relative}->bhts", query_dot_table, bucket_one_hot)

        mask = None
        if attention_mask is not None:
            mask = tf.cast(attention_mask, tf.bool)
            if mask.shape.rank == 2:
                mask = mask[:, tf.newaxis, tf.newaxis, :]
            else:
                mask = mask[:, tf.newaxis, :, :]
        if use_causal_mask or incremental:
            causal = key_positions <= query_positions[..., tf.newaxis]
            if per_row:
                causal = causal[:, tf.newaxis]  # [rows, 1 (heads), T, S]
            mask = causal if mask is None else tf.logical_and(mask, causal)
        logits = tf.cast(logits, tf.float32)
        if mask is not None:
            logits = tf.where(mask, logits, _MASKED_LOGIT)
        weights = tf.cast(tf.nn.softmax(logits, axis=-1), self.compute_dtype)
        dropped_weights = self.dropout_layer(weights, training=training)

        if beam_cache:
            heads = cache.heads(dropped_weights, newest)
        elif full_sequence:
            heads = tf.transpose(tf.matmul(dropped_weights, values), [0, 2, 1, 3])
        else:
            heads = tf.einsum("bhts,bhsd->bthd", dropped_weights, values)
        if self.maximum_relative_position is not None:
            if full_sequence:
                heads += _relative_heads(dropped_weights, self.relative_position_values,
                                         bucket_one_hot)
            else:
                weight_per_bucket = tf.einsum(f"bhts,{relative}->bhtr", dropped_weights,
                                              bucket_one_hot)
                heads += tf.einsum("bhtr,rd->bthd", weight_per_bucket,
                                   self.relative_position_values)
        if one_position:
            heads = tf.reshape(heads, [-1, self.num_heads * self.key_dim])
        else:
            heads = tf.reshape(heads, [query_shape[0], query_shape[1],
                                       self.num_heads * self.key_dim])
        outputs = self.output_dense(heads)
        if uses_memory_cache and return_attention_scores:  # [B, H, K*T, S] -> [B*K, H, T, S]
            source_width = _dimension(weights, 3)
            weights = tf.reshape(weights, [tf.shape(weights)[0], self.num_heads, -1,
                                           query_length, source_width])
            weights = tf.reshape(tf.transpose(weights, [0, 2, 1, 3, 4]),
                                 [-1, self.num_heads, query_length, source_width])

        results = (outputs,)
        if cache is not None:
            results += (cache,)
        if return_attention_scores:
            results += (weights,)
        return results[0] if len(results) == 1 else results

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


def _write_at(cache, update, step):
    """Returns `cache` `[B, H, L, D]` with `update` `[B, 1, H, D]` written at position `step`
    (a scalar, or `[B]`).

    A scatter of the `B * H` new vectors: under XLA an in-place update inside the decoding
    loop, instead of a pass over the whole cache.
    """
    shape = tf.shape(cache)
    batch, heads = tf.meshgrid(tf.range(shape[0]), tf.range(shape[1]), indexing="ij")
    positions = _per_example(step, tf.shape(batch), rank=2)
    indices = tf.stack([batch, heads, positions], axis=-1)  # [B, H, 3]
    return tf.tensor_scatter_nd_update(cache, indices, tf.cast(update[:, 0], cache.dtype))


def _per_example(step, shape, rank):
    """`step` (a scalar, or `[B]`) broadcast to `shape`, whose first dimension is `B`."""
    step = tf.cast(step, tf.int32)
    if step.shape.rank == 1:
        step = tf.reshape(step, [-1] + [1] * (rank - 1))
    return tf.broadcast_to(step, shape)


def _clone_initializer(initializer):
    """A fresh copy, so that no two weights share one initializer instance."""
    return initializer.__class__.from_config(initializer.get_config())
