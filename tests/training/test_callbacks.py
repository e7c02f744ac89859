import doctest

import pytest

from kerasnmt.training import CheckpointCallback, checkpoint_callback, non_finite_loss


@pytest.mark.parametrize("module", [checkpoint_callback, non_finite_loss])
def test_docstring_examples(module):
    results = doctest.testmod(module, raise_on_error=False)
    assert results.attempted > 0 and results.failed == 0


def test_checkpoint_callback_checks_its_arguments():
    with pytest.raises(ValueError, match="save_every_steps and keep_checkpoints must be at least 1"):
        CheckpointCallback("/tmp/unused", save_every_steps=0)
