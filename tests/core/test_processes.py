"""Workers die with their stage; one run of a stage at a time; a full disk is one line."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from vitheory.core.errors import StageBusy
from vitheory.core.paths import outputs, stages
from vitheory.core.processes import stage_lock

ENV = os.environ | {"PYTHONPATH": str(ROOT)}

def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_pool_workers_die_when_their_parent_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(
        "import os, time\n"
        "from vitheory.core.processes import worker_pool\n"
        "def busy(_):\n"
        "    time.sleep(0.5)\n"
        "    return os.getpid()\n"
        "if __name__ == '__main__':\n"
        "    with worker_pool(2) as pool:\n"
        "        print(*sorted(set(pool.map(busy, range(4)))), flush=True)\n"
        "        pool.submit(time.sleep, 600)\n"
        "        time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, str(script)], env=ENV, stdout=subprocess.PIPE, text=True)
    workers = [int(pid) for pid in parent.stdout.readline().split()]
    assert len(workers) == 2 and all(map(_alive, workers))
    parent.send_signal(signal.SIGKILL)  # the parent only: its workers are orphaned
    parent.wait()
    deadline = time.monotonic() + 5
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(_alive, workers)), "a worker outlived its parent"


def test_a_second_run_of_a_stage_stops_at_once_naming_the_holder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the locks live under the working directory, as when dvc runs a stage
    folder = outputs(stages()["report"])[0]
    with stage_lock("report", folder):
        second = subprocess.run([sys.executable, "-m", "stages.report"], cwd=tmp_path, env=ENV,
                                capture_output=True, text=True, timeout=120)
        with pytest.raises(StageBusy, match=f"pid {os.getpid()}"):
            with stage_lock("report", folder):
                pass
    assert second.returncode == 2
    assert second.stderr == (f"error: stage report is already running (pid {os.getpid()} writes {folder}); "
                             "wait for it to end or stop it, then rerun\n")
    with stage_lock("report", folder):  # released: free again, whatever the file holds
        pass


FULL_DISK = """
import runpy, sys
from safetensors import SafetensorError
import vitheory.core.artifacts as artifacts

def full(*args, **kwargs):
    raise SafetensorError("Error while serializing: IoError(Os { code: 28, kind: StorageFull, "
                          "message: \\"No space left on device\\" }) (os error 28)")

artifacts.save_file = full
sys.argv = ["stages/generate.py"]
runpy.run_module("stages.generate", run_name="__main__")
"""


def test_a_full_disk_is_one_line_and_keeps_the_earlier_outputs(tmp_path):
    (tmp_path / "params.yaml").write_bytes((ROOT / "params.yaml").read_bytes())
    earlier = tmp_path / "data/li_tokens/train.safetensors"
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(b"the earlier output")
    run = subprocess.run([sys.executable, "-c", FULL_DISK], cwd=tmp_path, env=ENV, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("error: cannot write data/") and "No space left on device" in run.stderr
    assert "free some space and rerun" in run.stderr
    assert earlier.read_bytes() == b"the earlier output"
    assert sorted(p.name for p in earlier.parent.parent.iterdir()) == ["li_tokens"]  # no temporary left
