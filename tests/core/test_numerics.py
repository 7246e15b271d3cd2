"""Importing vitheory pins the CPU kernels of torch and of the OpenBLAS under numpy and scipy."""

import json
import platform
import subprocess
import sys

import pytest

PROBE = """
import json, vitheory, numpy, scipy.linalg, torch
from threadpoolctl import threadpool_info
print(json.dumps({"aten": torch.backends.cpu.get_cpu_capability(),
                  "openblas": sorted({i["architecture"] for i in threadpool_info() if i["internal_api"] == "openblas"})}))
"""


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="the pins are for x86-64")
def test_importing_vitheory_first_pins_torch_and_openblas_to_avx2_kernels():
    env = {"PATH": "/usr/bin:/bin"}  # none of the pinned variables inherited from this process
    found = json.loads(subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                                      check=True).stdout)
    assert found == {"aten": "AVX2", "openblas": ["Haswell"]}
