"""Training utilities: the learning rate schedule, losses, metrics, checkpoints."""

from kerasnmt.training.average_checkpoints import average_checkpoints
from kerasnmt.training.checkpoint_callback import CheckpointCallback
from kerasnmt.training.losses import cross_entropy_sequence_loss, guided_alignment_cost
from kerasnmt.training.noam_decay import NoamDecay
from kerasnmt.training.non_finite_loss import NonFiniteLossError, StopOnNonFiniteLoss
from kerasnmt.training.perplexity import Perplexity

__all__ = [
    "CheckpointCallback",
    "NoamDecay",
    "NonFiniteLossError",
    "Perplexity",
    "StopOnNonFiniteLoss",
    "average_checkpoints",
    "cross_entropy_sequence_loss",
    "guided_alignment_cost",
]
