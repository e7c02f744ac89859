"""How many batches a weight update accumulates: the one formula `Translator.fit` and
`kerasnmt train` use."""

import math


def accumulation_steps(effective_batch_size, batch_size, num_replicas=1):
    """Batches accumulated per update to reach `effective_batch_size` (OpenNMT-tf's
    `effective_batch_size`, in the unit of `batch_size`), with `num_replicas` replicas
    each taking a batch of `batch_size`; 1 when `effective_batch_size` is None.

    Examples:
        >>> accumulation_steps(25000, 4096), accumulation_steps(25000, 4096, num_replicas=2)
        (7, 4)
        >>> accumulation_steps(None, 4096), accumulation_steps(1000, 4096)
        (1, 1)
    """
    if effective_batch_size is None:
        return 1
    return max(math.ceil(effective_batch_size / (batch_size * num_replicas)), 1)
