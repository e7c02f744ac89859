"""`train.mixed_precision: auto`: the Keras dtype policy this machine trains fastest in."""

import dataclasses

import tensorflow as tf

# /proc/cpuinfo flags of the CPU instructions that make bfloat16 matrix products fast:
# AVX-512 BF16 (Cooper Lake, Zen 4) and AMX (Sapphire Rapids).
BFLOAT16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")
# What `train.mixed_precision` may name besides None (float32): a mixed policy, or `auto`.
MIXED_PRECISION_SETTINGS = ("auto", "mixed_float16", "mixed_bfloat16")


@dataclasses.dataclass(frozen=True)
class Precision:
    """A dtype policy (`"mixed_bfloat16"`, `"mixed_float16"`, or None for float32) and
    why it was chosen."""

    policy: str | None
    reason: str


def cpu_flags(path="/proc/cpuinfo"):
    """The flags of the first processor of `path` (Linux's `/proc/cpuinfo`); an empty set
    when there is no such file."""
    try:
        with open(path, encoding="utf-8") as stream:
            for line in stream:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return set()


def choose_precision(setting, flags=None, gpus=None, tpu=False):
    """Resolves `train.mixed_precision`; `auto` picks by the hardware training runs on.

    `auto`: `mixed_bfloat16` on a TPU; `mixed_float16` (Keras adds loss scaling) when a
    GPU is visible, since training then runs on it whatever the CPU; `mixed_bfloat16`
    when the CPU has one of `BFLOAT16_CPU_FLAGS`; float32 otherwise. Any other setting is
    kept as it is.

    Args:
        setting: one of `MIXED_PRECISION_SETTINGS`, or None.
        flags: the CPU's flags; default `cpu_flags()`.
        gpus: the visible GPUs; default `tf.config.list_physical_devices("GPU")`.
        tpu: whether training runs on a TPU (`train.tpu`).

    Returns:
        A `Precision`.

    Raises:
        ValueError: for a setting not in `MIXED_PRECISION_SETTINGS` (nor None).

    Examples:
        >>> choose_precision("auto", flags={"avx2", "avx512f"}, gpus=[]).policy is None
        True
        >>> choose_precision("auto", flags={"avx512f", "avx512_bf16"}, gpus=[]).reason
        'mixed_bfloat16: the CPU has avx512_bf16'
        >>> choose_precision("auto", flags={"amx_bf16"}, gpus=["GPU:0"]).policy
        'mixed_float16'
    """
    if setting is not None and setting not in MIXED_PRECISION_SETTINGS:
        raise ValueError(f"mixed precision must be None or one of {MIXED_PRECISION_SETTINGS}, "
                         f"got {setting!r}")
    if setting != "auto":
        return Precision(setting, f"{setting or 'float32'}: set by train.mixed_precision")
    if tpu:
        return Precision("mixed_bfloat16", "mixed_bfloat16: training on a TPU")
    if gpus is None:
        gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        return Precision("mixed_float16", f"mixed_float16 with loss scaling: {len(gpus)} "
                         f"GPU{'s' if len(gpus) > 1 else ''} visible")
    if flags is None:
        flags = cpu_flags()
    found = [flag for flag in BFLOAT16_CPU_FLAGS if flag in flags]
    if found:
        return Precision("mixed_bfloat16", f"mixed_bfloat16: the CPU has {' and '.join(found)}")
    return Precision(None, "float32: no GPU, and the CPU has neither "
                     f"{' nor '.join(BFLOAT16_CPU_FLAGS)}")
