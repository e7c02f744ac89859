"""How each tensor of a preprocessed `(features, labels)` example is stored in a
`tf.train.Example` of a shard, and parsed back.

Examples:
    >>> import numpy as np
    >>> schema = [{"name": "features/ids", "dtype": "int32", "rank": 1},
    ...           {"name": "features/length", "dtype": "int32", "rank": 0},
    ...           {"name": "labels/ids_out", "dtype": "int32", "rank": 1},
    ...           {"name": "labels/length", "dtype": "int32", "rank": 0}]
    >>> records = serialize_chunk({"ids": np.array([[3, 4, 0]]), "length": np.array([2])},
    ...                           {"ids_out": np.array([[4, 2]]), "length": np.array([2])},
    ...                           schema)
    >>> features, labels = parse_chunk_fn(schema)(records)
    >>> features["ids"].numpy().tolist(), labels["ids_out"].numpy().tolist()
    ([[3, 4]], [[4, 2]])
"""

import numpy as np
import tensorflow as tf

from kerasnmt.data.batching import count_target_tokens, sequence_shape, source_length


def example_schema(chunk_spec):
    """The stored tensors, from the element spec of preprocessed chunks (`[B, ...]`)."""
    schema = []
    for part, specs in zip(("features", "labels"), chunk_spec):
        for key, spec in specs.items():
            rank = spec.shape.rank - 1
            if rank not in (0, 1, 2) or (rank == 2 and not spec.dtype.is_floating):
                raise ValueError(f"cannot store {part}[{key!r}] of spec {spec} in a shard")
            schema.append({"name": f"{part}/{key}", "dtype": spec.dtype.name, "rank": rank})
    return schema


def _kind(dtype_name):
    dtype = tf.as_dtype(dtype_name)
    return "float" if dtype.is_floating else "bytes" if dtype == tf.string else "int"


def _feature(kind, values):
    if kind == "int":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    if kind == "float":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


def serialize_chunk(features, labels, schema):
    """`tf.train.Example` strings for a chunk of padded `(features, labels)` NumPy arrays.

    Each example is cut to its own lengths (`sequence_shape`). Scalars and vectors are
    stored as lists; a matrix (the alignment) as its shape, the flat positions of its
    non-zero entries and their values. Keys are serialized in sorted order, so the bytes
    are the same on every run.
    """
    parts = {"features": features, "labels": labels}
    source_tokens = np.asarray(features["length"]).astype(np.int64)
    target_tokens = np.asarray(labels["length"]).astype(np.int64) - 1
    records = []
    for i in range(len(source_tokens)):
        stored = {}
        for entry in schema:
            part, key = entry["name"].split("/", 1)
            shape = sequence_shape(part, key, entry["rank"], int(source_tokens[i]), int(target_tokens[i]))
            value = np.asarray(parts[part][key][i])[tuple(slice(0, size) for size in shape)]
            if entry["rank"] == 2:
                flat = value.reshape(-1)
                positions = np.flatnonzero(flat)
                stored[entry["name"] + "/shape"] = _feature("int", list(value.shape))
                stored[entry["name"] + "/positions"] = _feature("int", positions.tolist())
                stored[entry["name"] + "/values"] = _feature("float", flat[positions].tolist())
            else:
                stored[entry["name"]] = _feature(_kind(entry["dtype"]), value.reshape(-1).tolist())
        example = tf.train.Example(features=tf.train.Features(feature=stored))
        records.append(example.SerializeToString(deterministic=True))
    return records


def _parse_spec(schema):
    spec = {}
    for entry in schema:
        stored_dtype = {"int": tf.int64, "float": tf.float32, "bytes": tf.string}[_kind(entry["dtype"])]
        if entry["rank"] == 0:
            spec[entry["name"]] = tf.io.FixedLenFeature([], stored_dtype)
        elif entry["rank"] == 1:
            spec[entry["name"]] = tf.io.RaggedFeature(stored_dtype, row_splits_dtype=tf.int64)
        else:
            spec[entry["name"] + "/shape"] = tf.io.FixedLenFeature([2], tf.int64)
            spec[entry["name"] + "/positions"] = tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64)
            spec[entry["name"] + "/values"] = tf.io.RaggedFeature(tf.float32, row_splits_dtype=tf.int64)
    return spec


def _dense_matrices(shapes, positions, values):
    """`[B, max rows, max columns]` from each example's shape and non-zero entries."""
    rows = positions.value_rowids()
    columns = tf.gather(shapes[:, 1], rows)
    flat_positions = positions.flat_values
    indices = tf.stack([rows, flat_positions // columns, flat_positions % columns], axis=1)
    dense_shape = tf.stack([tf.shape(shapes, out_type=tf.int64)[0], *tf.unstack(
        tf.reduce_max(tf.concat([shapes, [[0, 0]]], axis=0), axis=0))])
    return tf.scatter_nd(indices, values.flat_values, dense_shape)


def parse_chunk_fn(schema):
    """A function mapping `[B]` serialized examples to a padded `(features, labels)` chunk."""
    spec = _parse_spec(schema)

    def _parse(serialized):
        stored = tf.io.parse_example(serialized, spec)
        parts = {"features": {}, "labels": {}}
        for entry in schema:
            part, key = entry["name"].split("/", 1)
            dtype = tf.as_dtype(entry["dtype"])
            if entry["rank"] == 2:
                value = _dense_matrices(
                    stored[entry["name"] + "/shape"],
                    stored[entry["name"] + "/positions"],
                    stored[entry["name"] + "/values"],
                )
            elif entry["rank"] == 1:
                value = stored[entry["name"]].to_tensor("" if dtype == tf.string else 0)
            else:
                value = stored[entry["name"]]
            parts[part][key] = tf.cast(value, dtype) if value.dtype != dtype else value
        return parts["features"], parts["labels"]

    return _parse


def unpad_example(features, labels):
    """One example of a chunk cut to its own lengths."""
    source_tokens, target_tokens = source_length(features), count_target_tokens(labels)
    unpadded = []
    for part, values in (("features", features), ("labels", labels)):
        unpadded.append({
            key: value[tuple(slice(0, size) for size in sequence_shape(
                part, key, value.shape.rank, source_tokens, target_tokens))]
            for key, value in values.items()
        })
    return tuple(unpadded)
