"""keras-hub samplers built on kerasnmt's search rule (`kerasnmt.layers.search`)."""

from kerasnmt.samplers.penalized_beam_sampler import PenalizedBeamSampler

__all__ = ["PenalizedBeamSampler"]
