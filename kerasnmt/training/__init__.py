"""Training utilities: the learning rate schedules, the moving average of the weights,
losses, metrics, checkpoints."""

from kerasnmt.training.average_checkpoints import average_checkpoints
from kerasnmt.training.checkpoint_callback import CheckpointCallback
from kerasnmt.training.fused_adam import FusedAdam
from kerasnmt.training.inv_sqrt_decay import InvSqrtDecay
from kerasnmt.training.losses import cross_entropy_sequence_loss, guided_alignment_cost
from kerasnmt.training.moving_average import MovingAverage
from kerasnmt.training.noam_decay import NoamDecay
from kerasnmt.training.non_finite_loss import NonFiniteLossError, StopOnNonFiniteLoss
from kerasnmt.training.perplexity import Perplexity
from kerasnmt.training.schedule_wrapper import ScheduleWrapper

__all__ = [
    "CheckpointCallback",
    "FusedAdam",
    "InvSqrtDecay",
    "MovingAverage",
    "NoamDecay",
    "NonFiniteLossError",
    "Perplexity",
    "ScheduleWrapper",
    "StopOnNonFiniteLoss",
    "average_checkpoints",
    "cross_entropy_sequence_loss",
    "guided_alignment_cost",
]
