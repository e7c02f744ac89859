"""The index of a sharded corpus (`NAME.index.json`) and the files it lists: their names,
the index format, the fingerprint of the preprocessor that wrote them, and the checks
that reading runs before the first record: the index's format, that every shard and
lengths file exists, and that each shard has the size the index recorded (a truncated or
replaced file is named).

Examples:
    >>> shard_file_name("train", 3, 16), index_file_name("train")
    ('train-00003-of-00016.tfrecord', 'train.index.json')
    >>> lengths_file_name(shard_file_name("train", 3, 16))
    'train-00003-of-00016.lengths.npy'
"""

import hashlib
import json
import os

import numpy as np

INDEX_FORMAT = "kerasnmt-shards-2"


class ShardsError(ValueError):
    """A shard directory that cannot be read (missing index or shard, wrong count)."""


def shard_file_name(name, shard, num_shards):
    """`NAME-00003-of-00016.tfrecord`."""
    return f"{name}-{shard:05d}-of-{num_shards:05d}.tfrecord"


def lengths_file_name(shard_file):
    """`NAME-00003-of-00016.lengths.npy`, beside the shard `NAME-00003-of-00016.tfrecord`."""
    return shard_file[: -len(".tfrecord")] + ".lengths.npy"


def index_file_name(name):
    """`NAME.index.json`."""
    return f"{name}.index.json"


def _without_names(value):
    if isinstance(value, dict):
        return {key: _without_names(item) for key, item in value.items() if key != "name"}
    if isinstance(value, list):
        return [_without_names(item) for item in value]
    return value


def preprocessor_fingerprint(preprocessor):
    """A SHA-256 of what decides the ids: the tokenizers' configs (a SentencePiece model
    included) and the two vocabularies, layer names left out.

    Examples:
        >>> from kerasnmt.layers import TranslationPreprocessor
        >>> vocabulary = ["<blank>", "<s>", "</s>", "a", "b"]
        >>> fingerprint = preprocessor_fingerprint(TranslationPreprocessor.whitespace(vocabulary))
        >>> fingerprint == preprocessor_fingerprint(
        ...     TranslationPreprocessor.whitespace(list(vocabulary)))
        True
        >>> fingerprint == preprocessor_fingerprint(
        ...     TranslationPreprocessor.whitespace(vocabulary[:3] + ["b", "a"]))
        False
    """
    config = preprocessor.get_config()
    content = {
        key: _without_names(config[key])
        for key in ("source_tokenizer", "target_tokenizer", "source_vocabulary", "target_vocabulary")
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8")).hexdigest()


def load_shards_index(path):
    """Reads and checks `NAME.index.json`: every listed shard and lengths file must exist
    and every shard must have the size in bytes the index recorded.

    Args:
        path: the index file, or the directory holding exactly one index.

    Returns:
        The index as a dict, with `"directory"` and absolute `"paths"` of the shards.

    Raises:
        ShardsError: no index (an unfinished or killed `write_shards`), an index of
            another format (written by another version of kerasnmt), a missing shard or
            lengths file, or a shard whose size differs from the index (truncated or
            replaced).
    """
    path = str(path)
    if os.path.isdir(path):
        found = sorted(f for f in os.listdir(path) if f.endswith(".index.json"))
        if len(found) != 1:
            raise ShardsError(
                f"{path}: expected one NAME.index.json, found {found or 'none'} (an "
                "unfinished or killed write_shards leaves no index)"
            )
        path = os.path.join(path, found[0])
    if not os.path.exists(path):
        raise ShardsError(
            f"{path}: no shard index (an unfinished or killed write_shards leaves none)"
        )
    with open(path, encoding="utf-8") as file:
        index = json.load(file)
    if index.get("format") != INDEX_FORMAT:
        raise ShardsError(
            f"{path}: shard index of format {index.get('format')!r}, but this version of "
            f"kerasnmt reads {INDEX_FORMAT!r}: write the shards again with kerasnmt prepare"
        )
    directory = os.path.dirname(os.path.abspath(path))
    index["directory"] = directory
    index["path"] = os.path.abspath(path)
    index["paths"] = [os.path.join(directory, shard["file"]) for shard in index["shards"]]
    for shard, shard_path in zip(index["shards"], index["paths"]):
        lengths_path = os.path.join(directory, shard["lengths"])
        for needed in (shard_path, lengths_path):
            if not os.path.exists(needed):
                raise ShardsError(f"{path}: shard file {needed} is missing")
        size = os.path.getsize(shard_path)
        if size != shard["bytes"]:
            raise ShardsError(
                f"{shard_path}: {size} bytes, but the index {path} recorded {shard['bytes']} "
                "(a truncated or replaced shard): write the shards again with kerasnmt prepare"
            )
    return index


def shard_lengths(index):
    """The `[num_examples, 2]` source and target lengths (tokens) of each shard, in record
    order, from the `.lengths.npy` files beside the shards.

    Raises:
        ShardsError: a lengths file whose row count differs from its shard's example count.
    """
    lengths = []
    for shard in index["shards"]:
        path = os.path.join(index["directory"], shard["lengths"])
        array = np.load(path)
        if array.shape != (shard["num_examples"], 2):
            raise ShardsError(
                f"{path}: lengths of shape {array.shape}, but the index {index['path']} "
                f"recorded {shard['num_examples']} examples (expected ({shard['num_examples']}, 2))"
            )
        lengths.append(array)
    return lengths


def check_shards_preprocessor(index, preprocessor):
    """Raises `ShardsError` naming the index when its shards were written by another
    preprocessor (other tokenizers or vocabularies) than `preprocessor`."""
    if index["preprocessor"] != preprocessor_fingerprint(preprocessor):
        raise ShardsError(
            f"{index['path']}: these shards were written with other tokenizers or "
            "vocabularies than the model's (the preprocessor fingerprints differ): write "
            "them again with kerasnmt prepare and the model's data.source_vocabulary, "
            "data.target_vocabulary and SentencePiece models"
        )
