"""The options that filter training examples by length and group them into batches."""

import dataclasses

from kerasnmt.data.batching import length_limits_description


@dataclasses.dataclass(frozen=True)
class BatchingOptions:
    """How a training pipeline filters examples by length and batches them.

    The options `training_dataset` and `make_training_batches` take one by one and hand
    on together to their batching steps (and, by name, to `shard_batches`). Their meaning
    is OpenNMT-tf's, as those functions document.

    Args:
        batch_size: examples or tokens (`batch_type`) per batch, per replica.
        batch_type: `"examples"` or `"tokens"`.
        batch_size_multiple: with `"tokens"`, batch sizes are multiples of this value.
        length_bucket_width: the width of the length buckets (`None`: no bucketing).
        maximum_features_length: drop examples with a longer source (tokens).
        maximum_labels_length: drop examples with a longer target, counted with its end
            mark `</s>`.
        pad_to_bucket_boundary: pad to the bucket's longest length (static shapes).
        num_replicas: batches hold `batch_size * num_replicas` and their size is a
            multiple of `num_replicas`; at least 1.

    Examples:
        >>> options = BatchingOptions(batch_size=8, maximum_labels_length=3, num_replicas=2)
        >>> options.batch_type, options.num_replicas
        ('examples', 2)
        >>> options.limits_description().endswith("divisible by num_replicas=2")
        True
    """

    batch_size: int
    batch_type: str = "examples"
    batch_size_multiple: int = 1
    length_bucket_width: int = 1
    maximum_features_length: int = None
    maximum_labels_length: int = None
    pad_to_bucket_boundary: bool = False
    num_replicas: int = 1

    def __post_init__(self):
        if self.num_replicas < 1:
            raise ValueError(f"num_replicas must be at least 1, got {self.num_replicas}")

    def limits_description(self):
        """What an example and a batch need to be kept, for the error of an empty pipeline."""
        text = length_limits_description(self.maximum_features_length, self.maximum_labels_length)
        if self.num_replicas > 1:
            text += f", and batches need a size divisible by num_replicas={self.num_replicas}"
        return text
