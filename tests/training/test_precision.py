"""`train.mixed_precision: auto`: the policy chosen for known hardware."""

import pytest

from kerasnmt.training.precision import choose_precision, cpu_flags

# Flags as /proc/cpuinfo lists them on three kinds of machines.
ZEN3 = {"fpu", "sse4_2", "avx", "avx2", "fma"}
COOPER_LAKE = ZEN3 | {"avx512f", "avx512bw", "avx512_vnni", "avx512_bf16"}
SAPPHIRE_RAPIDS = COOPER_LAKE | {"amx_tile", "amx_int8", "amx_bf16"}


@pytest.mark.parametrize("flags, gpus, tpu, policy, reason", [
    (ZEN3, [], False, None, "float32: no GPU, and the CPU has neither avx512_bf16 nor amx_bf16"),
    ({"avx512f", "avx512_vnni"}, [], False, None,
     "float32: no GPU, and the CPU has neither avx512_bf16 nor amx_bf16"),
    (COOPER_LAKE, [], False, "mixed_bfloat16", "mixed_bfloat16: the CPU has avx512_bf16"),
    (SAPPHIRE_RAPIDS, [], False, "mixed_bfloat16",
     "mixed_bfloat16: the CPU has avx512_bf16 and amx_bf16"),
    (ZEN3 | {"amx_bf16"}, [], False, "mixed_bfloat16", "mixed_bfloat16: the CPU has amx_bf16"),
    # Training runs on the GPU, whatever the CPU.
    (ZEN3, ["GPU:0"], False, "mixed_float16", "mixed_float16 with loss scaling: 1 GPU visible"),
    (SAPPHIRE_RAPIDS, ["GPU:0", "GPU:1"], False, "mixed_float16",
     "mixed_float16 with loss scaling: 2 GPUs visible"),
    (ZEN3, [], True, "mixed_bfloat16", "mixed_bfloat16: training on a TPU"),
])
def test_auto_picks_the_policy_of_the_hardware(flags, gpus, tpu, policy, reason):
    precision = choose_precision("auto", flags=flags, gpus=gpus, tpu=tpu)
    assert (precision.policy, precision.reason) == (policy, reason)


@pytest.mark.parametrize("setting", ["mixed_float16", "mixed_bfloat16", None])
def test_a_policy_given_is_kept_whatever_the_hardware(setting):
    precision = choose_precision(setting, flags=SAPPHIRE_RAPIDS, gpus=["GPU:0"])
    assert precision.policy == setting
    assert precision.reason == f"{setting or 'float32'}: set by train.mixed_precision"


def test_cpu_flags_reads_the_flags_line_of_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu avx2 avx512_bf16\n\n"
        "processor\t: 1\nflags\t\t: fpu avx2 avx512_bf16\n", encoding="utf-8")
    assert cpu_flags(cpuinfo) == {"fpu", "avx2", "avx512_bf16"}
    assert cpu_flags(tmp_path / "missing") == set()


def test_a_setting_that_names_no_policy_is_refused():
    assert choose_precision("mixed_float16").policy == "mixed_float16"
    assert choose_precision(None).policy is None
    with pytest.raises(ValueError, match=r"one of \('auto', 'mixed_float16', "
                       r"'mixed_bfloat16'\), got 'float16'"):
        choose_precision("float16")
