import pytest

from kerasnmt.training import CheckpointCallback


def test_checkpoint_callback_checks_its_arguments():
    with pytest.raises(ValueError, match="save_every_steps and keep_checkpoints must be at least 1"):
        CheckpointCallback("/tmp/unused", save_every_steps=0)
