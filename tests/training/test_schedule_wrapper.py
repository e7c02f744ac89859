import math

import keras
import pytest

from kerasnmt.config import check_config
from kerasnmt.training import NoamDecay, ScheduleWrapper
from kerasnmt.training.run_optimizer import build_optimizer


def noam(step, scale=2.0, model_dim=16, warmup_steps=10):
    n = step + 1
    return scale * model_dim**-0.5 * min(n**-0.5, n * warmup_steps**-1.5)


def opennmt_tf(update, start_step, step_duration, minimum_learning_rate):
    """OpenNMT-tf's ScheduleWrapper around NoamDecay, at weight update `update`."""
    return max(noam(max(update - start_step, 0) // step_duration), minimum_learning_rate)


@pytest.mark.parametrize("start_step, step_duration, minimum_learning_rate", [
    (0, 1, 0.0), (5, 1, 0.0), (0, 3, 0.0), (5, 3, 0.12), (2, 2, 1.0),
])
def test_values_follow_opennmt_tfs_schedule_wrapper(start_step, step_duration,
                                                    minimum_learning_rate):
    wrapped = ScheduleWrapper(NoamDecay(2.0, 16, 10), start_step, step_duration,
                              minimum_learning_rate)
    for update in range(60):
        assert math.isclose(
            float(wrapped(update)),
            opennmt_tf(update, start_step, step_duration, minimum_learning_rate),
            rel_tol=1e-6,
        ), update


def test_the_first_steps_and_the_floor_by_hand():
    wrapped = ScheduleWrapper(NoamDecay(2.0, 16, 10), start_step=3, step_duration=2,
                              minimum_learning_rate=0.1)
    # Updates 0 to 4 are schedule step 0: 2 / 4 * 10 ** -1.5 = 0.0158 < 0.1, the floor.
    assert [float(wrapped(u)) for u in range(5)] == pytest.approx([0.1] * 5)
    # Update 13 is schedule step (13 - 3) // 2 = 5: n = 6, 0.5 * 6 * 10 ** -1.5 = 0.0949.
    assert float(wrapped(13)) == pytest.approx(0.1)
    # Update 21 is schedule step 9: n = 10, the peak 0.5 * 10 ** -0.5 = 0.1581.
    assert float(wrapped(21)) == pytest.approx(0.5 * 10**-0.5, rel=1e-6)


def test_accumulated_batches_count_as_one_update():
    plain = ScheduleWrapper(NoamDecay(2.0, 16, 10), start_step=4, step_duration=2)
    accumulated = ScheduleWrapper(NoamDecay(2.0, 16, 10), start_step=4, step_duration=2,
                                  accumulation_steps=3)
    for batch in range(90):
        assert float(accumulated(batch)) == float(plain(batch // 3))


def test_config_round_trip_inside_an_optimizer():
    wrapped = ScheduleWrapper(NoamDecay(2.0, 16, 10), 4, 2, 0.05, accumulation_steps=3)
    optimizer = keras.optimizers.Adam(wrapped)
    revived = keras.optimizers.Adam.from_config(optimizer.get_config())._learning_rate
    assert isinstance(revived, ScheduleWrapper) and isinstance(revived.schedule, NoamDecay)
    assert revived.get_config() == wrapped.get_config()
    assert [float(revived(s)) for s in range(40)] == [float(wrapped(s)) for s in range(40)]


def test_the_run_configuration_builds_the_wrapped_schedule():
    config = check_config({
        "model": {"num_units": 16, "num_heads": 2},
        "params": {"learning_rate": 2.0, "decay_params": {"warmup_steps": 10},
                   "start_decay_steps": 5, "decay_step_duration": 3,
                   "minimum_learning_rate": 0.12},
        "train": {"batch_size": 100, "batch_type": "tokens", "effective_batch_size": 400},
    }, base_dir=".")
    optimizer = build_optimizer(config)
    assert optimizer.gradient_accumulation_steps == 4
    schedule = optimizer._learning_rate
    for batch in range(0, 200, 7):
        assert math.isclose(float(schedule(batch)), opennmt_tf(batch // 4, 5, 3, 0.12),
                            rel_tol=1e-6), batch
