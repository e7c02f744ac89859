"""BatchingOptions: the batching options of the training pipelines, checked and described."""

import dataclasses
import inspect

import pytest

from kerasnmt.data.batching_options import BatchingOptions
from kerasnmt.data.shard_batches import shard_batches
from kerasnmt.data.training_pipeline import make_training_batches, training_dataset


def _parameters(function):
    return inspect.signature(function).parameters


def test_fields_follow_make_training_batches_in_order_and_defaults():
    # make_training_batches builds its options positionally from its own arguments.
    fields = dataclasses.fields(BatchingOptions)
    parameters = list(_parameters(make_training_batches).values())[2:2 + len(fields)]
    assert [field.name for field in fields] == [parameter.name for parameter in parameters]
    assert [field.default for field in fields[1:]] == [p.default for p in parameters[1:]]


def test_its_fields_are_arguments_of_training_dataset_and_shard_batches():
    names = {field.name for field in dataclasses.fields(BatchingOptions)}
    assert names <= set(_parameters(training_dataset))
    assert names <= set(_parameters(shard_batches))


def test_num_replicas_below_one_is_refused():
    with pytest.raises(ValueError, match="num_replicas must be at least 1, got 0"):
        BatchingOptions(batch_size=4, num_replicas=0)


def test_options_cannot_change():
    options = BatchingOptions(batch_size=4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.batch_size = 8


def test_limits_description_names_the_limits_and_the_replicas_only_when_several():
    one = BatchingOptions(batch_size=4, maximum_features_length=5, maximum_labels_length=7)
    assert one.limits_description() == (
        "every example needs 0 < source length <= maximum_features_length=5 and 0 < target "
        "length <= maximum_labels_length=7 (in tokens, targets counted with their end mark </s>)"
    )
    two = dataclasses.replace(one, num_replicas=2)
    assert two.limits_description() == (
        one.limits_description() + ", and batches need a size divisible by num_replicas=2"
    )
