"""Turns a `tf.data` pipeline that yields nothing into an error instead of a silent end.

`dataset.repeat()` over a dataset that yields no element ends at once (or, when the
datasets are repeated before a filter, never yields and hangs); either way the cause,
usually a length filter that rejects every example, is hidden. `fail_if_empty` makes the
first pass over such a dataset raise `tf.errors.InvalidArgumentError` with a message
that says what happened.
"""

import tensorflow as tf


def _placeholder(spec):
    shape = [0 if size is None else size for size in spec.shape.as_list()]
    if spec.dtype == tf.string:
        return tf.fill(shape, "")
    return tf.zeros(shape, spec.dtype)


def fail_if_empty(dataset, message):
    """Raises `message` when a pass over `dataset` ends without yielding any element.

    A sentinel placeholder is appended after the last element and removed again; if it
    arrives first, the pipeline fails with `message`. The elements, their order and their
    structure are unchanged. Each new iteration (each epoch of a `repeat()` applied
    afterwards) checks again.

    Args:
        dataset: a finite `tf.data.Dataset` of tensors (no ragged or sparse components).
        message: the error message.

    Returns:
        A `tf.data.Dataset` with the same elements.

    Examples:
        >>> import tensorflow as tf
        >>> empty = tf.data.Dataset.range(5).filter(lambda x: x > 10)
        >>> try:
        ...     list(fail_if_empty(empty, "nothing left after filtering"))
        ... except tf.errors.InvalidArgumentError as error:
        ...     print("nothing left after filtering" in error.message)
        True
        >>> [int(x) for x in fail_if_empty(tf.data.Dataset.range(3), "unused")]
        [0, 1, 2]
    """
    spec = dataset.element_spec
    marked = dataset.map(lambda *element: (tf.constant(True), element))
    placeholder = tf.nest.map_structure(_placeholder, spec if isinstance(spec, tuple) else (spec,))
    sentinel = tf.data.Dataset.from_tensors((tf.constant(False), placeholder))
    marked = marked.concatenate(sentinel)

    def _track(seen, flagged):
        is_element, element = flagged
        seen = tf.logical_or(seen, is_element)
        return seen, (is_element, seen, element)

    def _keep(is_element, seen, element):
        def _fail():
            check = tf.debugging.Assert(tf.constant(False), [message])
            with tf.control_dependencies([check]):
                return tf.constant(False)

        return tf.cond(seen, lambda: is_element, _fail)

    marked = marked.scan(tf.constant(False), _track).filter(_keep)
    if isinstance(spec, tuple):
        return marked.map(lambda is_element, seen, element: element)
    return marked.map(lambda is_element, seen, element: element[0])
