import math

import keras
import pytest

from kerasnmt.training import InvSqrtDecay, NoamDecay, ScheduleWrapper

# Hand-computed with OpenNMT-tf's convention: the schedule reads step s as n = s + 1.
# learning_rate 0.005, warmup_steps 2000, initial_learning_rate 0.
PEAK_0_005 = [
    (0, 0.005 * 1 / 2000),  # 2.5e-06: one warmup step up from 0
    (1, 0.005 * 2 / 2000),  # 5e-06
    (999, 0.0025),  # n = 1000: half way up
    (1999, 0.005),  # n = 2000: the peak
    (2000, 0.005 * math.sqrt(2000 / 2001)),  # first step of the decay
    (7999, 0.0025),  # n = 8000: 0.005 * sqrt(2000 / 8000)
    (1_999_999, 0.005 * math.sqrt(0.001)),  # n = 2e6: 1.58113883e-04
]


@pytest.mark.parametrize("step, expected", PEAK_0_005)
def test_values_from_zero(step, expected):
    schedule = InvSqrtDecay(learning_rate=0.005, warmup_steps=2000)
    assert math.isclose(float(schedule(step)), expected, rel_tol=1e-6)


@pytest.mark.parametrize(
    "step, expected",
    [
        (0, 1e-4 + 4.9e-3 / 2000),  # 1.0245e-04: starts one warmup step above 1e-4
        (999, 2.55e-3),  # 1e-4 + 4.9e-3 / 2
        (1999, 0.005),  # the same peak
        (7999, 0.0025),  # the decay does not depend on initial_learning_rate
    ],
)
def test_values_from_an_initial_learning_rate(step, expected):
    schedule = InvSqrtDecay(0.005, 2000, initial_learning_rate=1e-4)
    assert math.isclose(float(schedule(step)), expected, rel_tol=1e-6)


def test_the_peak_is_the_learning_rate_at_the_end_of_warmup():
    schedule = InvSqrtDecay(learning_rate=0.5, warmup_steps=10, initial_learning_rate=0.1)
    values = [float(schedule(step)) for step in range(40)]
    assert values.index(max(values)) == 9  # n = 10 = warmup_steps
    assert math.isclose(max(values), 0.5, rel_tol=1e-6)
    assert all(a < b for a, b in zip(values[:10], values[1:10]))  # rises during warmup
    assert all(a > b for a, b in zip(values[9:], values[10:]))  # then decays


def test_a_tensor_of_steps():
    schedule = InvSqrtDecay(learning_rate=0.005, warmup_steps=2000)
    steps = [step for step, _ in PEAK_0_005]
    values = schedule(keras.ops.convert_to_tensor(steps, dtype="int64")).numpy()
    for value, (_, expected) in zip(values, PEAK_0_005):
        assert math.isclose(float(value), expected, rel_tol=1e-6)


def test_step_duration_counts_several_optimizer_steps_as_one():
    schedule = InvSqrtDecay(learning_rate=0.005, warmup_steps=2000, step_duration=4)
    assert [float(schedule(s)) for s in range(4)] == [float(schedule(0))] * 4
    assert math.isclose(float(schedule(3)), 2.5e-6, rel_tol=1e-6)  # schedule step 0
    assert math.isclose(float(schedule(4)), 5e-6, rel_tol=1e-6)  # schedule step 1
    assert math.isclose(float(schedule(4 * 1999 + 3)), 0.005, rel_tol=1e-6)
    assert math.isclose(float(schedule(4 * 7999)), 0.0025, rel_tol=1e-6)


@pytest.mark.parametrize("model_dim", [16, 512])
def test_equals_noam_decay_with_the_scale_of_its_peak(model_dim):
    peak, warmup_steps = 0.005, 20
    inv_sqrt = InvSqrtDecay(peak, warmup_steps)
    noam = NoamDecay(peak * math.sqrt(model_dim * warmup_steps), model_dim, warmup_steps)
    for step in [*range(0, 60), 1000, 123456]:
        assert math.isclose(float(inv_sqrt(step)), float(noam(step)), rel_tol=1e-5), step


def test_config_round_trip_inside_an_optimizer():
    schedule = InvSqrtDecay(0.005, 2000, initial_learning_rate=1e-4, step_duration=2)
    assert schedule.get_config() == {
        "learning_rate": 0.005,
        "warmup_steps": 2000,
        "initial_learning_rate": 1e-4,
        "step_duration": 2,
    }
    assert InvSqrtDecay.from_config(schedule.get_config()).get_config() == schedule.get_config()
    optimizer = keras.optimizers.Adam(schedule)
    revived = keras.optimizers.Adam.from_config(optimizer.get_config())
    assert isinstance(revived._learning_rate, InvSqrtDecay)
    assert revived._learning_rate.get_config() == schedule.get_config()
    assert [float(revived._learning_rate(s)) for s in (0, 7, 5000)] == [
        float(schedule(s)) for s in (0, 7, 5000)
    ]


def test_inside_a_schedule_wrapper():
    wrapped = ScheduleWrapper(InvSqrtDecay(0.005, 2000, initial_learning_rate=1e-4),
                              start_step=10, step_duration=2, minimum_learning_rate=1e-3,
                              accumulation_steps=3)
    # Optimizer step 3 * (10 + 2 * 1999) = 12024: weight update 4008, schedule step 1999.
    assert math.isclose(float(wrapped(12024)), 0.005, rel_tol=1e-6)
    assert math.isclose(float(wrapped(0)), 1e-3, rel_tol=1e-6)  # 1.0245e-4, floored
    revived = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(wrapped))
    assert isinstance(revived.schedule, InvSqrtDecay)
    assert revived.get_config() == wrapped.get_config()


@pytest.mark.parametrize("wrapped", [False, True])
def test_translator_counts_weight_updates_with_gradient_accumulation(wrapped):
    from kerasnmt.training.fitting import set_gradient_accumulation
    from tests.models.translator_fixtures import tiny_translator

    schedule = InvSqrtDecay(0.005, 2000)
    translator = tiny_translator()
    translator.compile(optimizer=keras.optimizers.Adam(
        ScheduleWrapper(schedule) if wrapped else schedule))
    set_gradient_accumulation(translator.optimizer, 4)  # what fit(effective_batch_size=...) does
    optimizer_schedule = translator.optimizer._learning_rate
    if wrapped:
        assert optimizer_schedule.accumulation_steps == 4
    else:
        assert optimizer_schedule.step_duration == 4
    assert schedule.step_duration == 1  # the caller's schedule object is left as it was
    assert math.isclose(float(optimizer_schedule(4 * 1999)), 0.005, rel_tol=1e-6)
