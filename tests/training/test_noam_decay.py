import math

import keras
import pytest

from kerasnmt.training import NoamDecay


def formula(step, scale, model_dim, warmup_steps):
    n = step + 1
    return scale * model_dim**-0.5 * min(n**-0.5, n * warmup_steps**-1.5)


@pytest.mark.parametrize("step", [0, 1, 49, 99, 100, 1000, 123456])
def test_values_follow_the_formula(step):
    schedule = NoamDecay(scale=2.0, model_dim=16, warmup_steps=100)
    assert math.isclose(float(schedule(step)), formula(step, 2.0, 16, 100), rel_tol=1e-6)


def test_warmup_peak_and_decay():
    schedule = NoamDecay(scale=1.0, model_dim=64, warmup_steps=10)
    values = [float(schedule(step)) for step in range(30)]
    assert values.index(max(values)) == 9  # n = 10 = warmup_steps
    assert math.isclose(max(values), (64 * 10) ** -0.5, rel_tol=1e-6)


def test_step_duration_counts_several_optimizer_steps_as_one():
    schedule = NoamDecay(scale=2.0, model_dim=16, warmup_steps=100, step_duration=4)
    assert [float(schedule(s)) for s in (0, 3)] == [float(schedule(0))] * 2
    assert math.isclose(float(schedule(9)), formula(2, 2.0, 16, 100), rel_tol=1e-6)


def test_config_round_trip_inside_an_optimizer():
    schedule = NoamDecay(scale=2.0, model_dim=16, warmup_steps=100, step_duration=2)
    assert NoamDecay.from_config(schedule.get_config()).get_config() == schedule.get_config()
    optimizer = keras.optimizers.Adam(schedule)
    revived = keras.optimizers.Adam.from_config(optimizer.get_config())
    assert isinstance(revived._learning_rate, NoamDecay)
    assert float(revived._learning_rate(7)) == float(schedule(7))
