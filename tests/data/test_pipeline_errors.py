import tensorflow as tf

from kerasnmt.data.empty_check import fail_if_empty
from kerasnmt.data.pipeline_errors import corpus_error
from kerasnmt.data.text_files import CorpusError


def test_the_message_of_a_check_inside_a_pipeline_comes_back_alone():
    dataset = fail_if_empty(tf.data.Dataset.range(4).filter(lambda x: x > 9),
                            "train.src: no example is left after filtering")
    try:
        list(dataset.repeat())
    except tf.errors.InvalidArgumentError as error:
        found = corpus_error(error)
    assert isinstance(found, CorpusError)
    assert str(found) == "train.src: no example is left after filtering"


def test_other_tensorflow_errors_are_not_bad_input():
    try:
        tf.reshape(tf.range(3), [2, 2])
    except tf.errors.InvalidArgumentError as error:
        assert corpus_error(error) is None
