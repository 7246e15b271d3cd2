"""vitheory: executable theory of vision transformers.

The science of the pipeline: data models, models, training, analyses, figures and claim checks.
Stage scripts in `stages/` are thin wrappers around this package. Importing the package is light
(no torch) so that params are checked at once; `load_checkpoint` and `save_checkpoint` import
torch when first used.

Importing it also pins the CPU kernels torch uses, before torch loads: ATen's vectorised kernels and
oneDNN's convolutions at AVX2, MKL in its conditional-numerical-reproducibility mode on its own branch
for the CPU (AUTO) with dynamic threading off, the OpenBLAS under numpy and scipy at its Haswell (AVX2)
kernels, and 2 threads (the committed run's) whatever the core count. Without it, AVX-512 and AVX2
machines train to different weights, and numpy's fits and scipy's eigensolver differ in the last digits.
A setting already in the environment is left as it is: `MKL_CBWR=COMPATIBLE` (PORTABLE_NUMERICS) opts
into the one MKL branch Intel and AMD CPUs run alike. The README's reproducibility section says what
each setting promises and costs.
"""

import os
import platform

# MKL honours only its AUTO and COMPATIBLE branches on a non-Intel CPU (MKL_CBWR=AVX2 runs AUTO on AMD, its
# verbose log says CNR:AUTO), so only COMPATIBLE names the same code on both vendors (docs/PERF.md). It costs
# the ViT's trainings 1.6x on our AMD machines and buys bytes across vendors, which the project promises only
# on the CPU model tested (docs/PERF.md): AUTO is the default, COMPATIBLE an opt-in. CNR's run-to-run identity
# needs a fixed thread count, not one MKL or torch adjusts to the machine's cores.
CPU_NUMERICS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AUTO", "MKL_DYNAMIC": "FALSE",
                "OMP_NUM_THREADS": "2", "ONEDNN_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "Haswell"}
PORTABLE_NUMERICS = {"MKL_CBWR": "COMPATIBLE"}  # set in the environment to share a DVC cache across CPU vendors
if platform.machine().lower() in ("x86_64", "amd64"):
    for _name, _value in CPU_NUMERICS.items():
        os.environ.setdefault(_name, _value)

__all__ = ["load_checkpoint", "save_checkpoint"]


def __getattr__(name: str):
    if name in __all__:
        from vitheory.core import checkpoint

        return getattr(checkpoint, name)
    raise AttributeError(f"module 'vitheory' has no attribute {name!r}")
