"""The bundle of a run's DVC outputs (`python -m vitheory.bundle`): the same tar bytes every time, a damaged
or partial bundle refused in one line before anything is written, and make / use / `dvc pull` on a
one-stage pipeline that builds in a second (tests/test_pipeline.py does it on the tiny pipeline)."""

import errno
import os
import sys
import tarfile

import pytest
from test_pipeline import _dvc, _run, fresh_clone, run_and_commit

from vitheory import bundle
from vitheory.bundle import UNPACKED, checksum_path, pack

PIPELINE = """\
stages:
  make:
    cmd: python -c "import pathlib; pathlib.Path('data').mkdir(); pathlib.Path('data/x.bin').write_bytes(bytes(range(256))); pathlib.Path('model.bin').write_text('w')"
    outs:
      - data
      - model.bin
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The pipeline, run and committed (its DVC cache holds data/ and model.bin)."""
    repo = tmp_path_factory.mktemp("built")
    (repo / "dvc.yaml").write_text(PIPELINE)
    return run_and_commit(repo)


@pytest.fixture
def clone(built, tmp_path):
    """A fresh clone: what git holds, no DVC cache."""
    return fresh_clone(built, tmp_path)


def _main(root, monkeypatch, capsys, *args):
    monkeypatch.chdir(root)
    monkeypatch.setenv("DVC_NO_ANALYTICS", "1")
    code = bundle.main(list(args))
    said = capsys.readouterr()
    return code, said.out.strip(), said.err.strip()


def _folder(root, names):
    """Files of a DVC remote's layout, written in the order given."""
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(name.encode() * 100)
    return root


NAMES = ["files/md5/ab/cdef", "files/md5/0f/1234.dir", "files/md5/ab/0000"]


def test_the_tar_has_the_same_bytes_whatever_the_order_times_and_modes_of_its_files(tmp_path):
    first = _folder(tmp_path / "first", NAMES)
    second = _folder(tmp_path / "second", NAMES[::-1])
    os.utime(second / NAMES[0], (1e9, 1e9))
    (second / NAMES[1]).chmod(0o444)
    digests = [pack(first, tmp_path / "a.tar"), pack(second, tmp_path / "b.tar")]
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    assert digests[0] == digests[1] == bundle.sha256(tmp_path / "a.tar")
    assert checksum_path(tmp_path / "a.tar").read_text() == f"{digests[0]}  a.tar\n"
    with tarfile.open(tmp_path / "b.tar") as archive:
        members = archive.getmembers()
    assert [m.name for m in members] == sorted(NAMES)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname, m.mode) for m in members} == {(0, 0, 0, "", "", 0o644)}


@pytest.fixture
def packed(tmp_path):
    tar = tmp_path / "run.tar"
    pack(_folder(tmp_path / "remote", NAMES), tar)
    return tar


def _nothing_written(clone):
    return not (clone / UNPACKED).exists() and not (clone / ".dvc/config.local").exists()


def test_a_damaged_bundle_is_refused_in_one_line_before_anything_is_written(clone, packed, monkeypatch, capsys):
    data = bytearray(packed.read_bytes())
    data[600] ^= 1
    packed.write_bytes(bytes(data))
    code, _, err = _main(clone, monkeypatch, capsys, "use", str(packed))
    assert code == 2
    assert err == (f"error: {packed}: its sha256 differs from {checksum_path(packed)}'s: the file is damaged or "
                   "not that bundle; fetch both again")
    assert _nothing_written(clone)


def test_a_bundle_without_its_checksum_is_refused(clone, packed, monkeypatch, capsys):
    checksum_path(packed).unlink()
    code, _, err = _main(clone, monkeypatch, capsys, "use", str(packed))
    assert (code, err) == (2, f"error: {checksum_path(packed)}: missing; put the .sha256 file that came with the "
                              "bundle beside it")
    assert _nothing_written(clone)


@pytest.mark.parametrize("content, said", [(b"not a tar at all" * 64, "not a readable tar"),
                                           (None, "not a DVC cache bundle (it holds notes.txt)")])
def test_a_bad_tar_with_a_matching_checksum_is_one_line_and_unpacks_nothing(clone, tmp_path, content, said,
                                                                            monkeypatch, capsys):
    tar = tmp_path / "bad.tar"
    if content is None:  # a readable tar that is not a DVC remote's files
        pack(_folder(tmp_path / "stray", [*NAMES, "notes.txt"]), tar)
    else:
        tar.write_bytes(content)
        checksum_path(tar).write_text(f"{bundle.sha256(tar)}  bad.tar\n")
    code, _, err = _main(clone, monkeypatch, capsys, "use", str(tar))
    assert code == 2 and err.startswith(f"error: {tar}: {said}") and "\n" not in err, err
    assert _nothing_written(clone)
    assert not list((clone / ".vitheory").glob(".*.tmp"))


def test_without_dvc_each_command_is_one_line(clone, packed, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "dvc", None)  # `import dvc` fails
    for args in (["make"], ["use", str(packed)]):
        code, _, err = _main(clone, monkeypatch, capsys, *args)
        assert code == 2 and err.startswith("error: dvc is not installed in ") and "pip install" in err, err
    assert _nothing_written(clone)


def test_a_full_disk_is_one_line(clone, packed, monkeypatch, capsys):
    def full(tar, folder, accept):
        raise OSError(errno.ENOSPC, "No space left on device", str(folder))

    monkeypatch.setattr(bundle, "unpack", full)
    code, _, err = _main(clone, monkeypatch, capsys, "use", str(packed))
    assert (code, err) == (2, f"error: cannot write {(clone / UNPACKED).resolve()}: No space left on device; free "
                              "some space and rerun")


def test_make_refuses_a_cache_that_lacks_files_of_the_run(clone, monkeypatch, capsys):
    code, _, err = _main(clone, monkeypatch, capsys, "make", "out.tar")
    assert code == 2, err
    assert err == ("error: the DVC cache here lacks files of 2 of the run's outputs (data, model.bin); make the "
                   "bundle where the run was made, or `dvc repro` first")
    assert not (clone / "out.tar").exists()


def test_make_checks_what_dvc_push_wrote(built, tmp_path, monkeypatch, capsys):
    from dvc.repo import Repo

    monkeypatch.setattr(Repo, "push", lambda repo, remote: 0)  # a push that writes nothing and says nothing
    code, _, err = _main(built, monkeypatch, capsys, "make", str(tmp_path / "out.tar"))
    assert (code, err) == (2, "error: `dvc push` left out files of 2 of the run's outputs (data, model.bin); make "
                              "the bundle again")
    assert not (tmp_path / "out.tar").exists()


def test_make_refuses_a_dvc_lock_that_is_not_committed(clone, monkeypatch, capsys):
    with open(clone / "dvc.lock", "a") as lock:
        lock.write("# edited\n")
    code, _, err = _main(clone, monkeypatch, capsys, "make")
    commit = _run(["git", "rev-parse", "HEAD"], clone).stdout.strip()
    assert (code, err) == (2, f"error: dvc.lock differs from commit {commit[:12]}: commit the run (or "
                              "`git checkout dvc.lock`) and make the bundle again")


def test_make_use_pull_restores_every_output_in_a_fresh_clone(built, clone, monkeypatch, capsys):
    code, said, err = _main(built, monkeypatch, capsys, "make")
    commit = _run(["git", "rev-parse", "HEAD"], built).stdout.strip()
    tar = built / f"vitheory-run-{commit[:12]}.tar"
    assert code == 0 and said.startswith(f"{tar.name}: 3 files of commit {commit[:12]}'s run"), err
    code, said, err = _main(clone, monkeypatch, capsys, "use", str(tar))
    assert code == 0 and said.endswith("now: `dvc pull && python -m vitheory.verify`"), err
    _dvc("pull", cwd=clone)
    assert _dvc("status", "-q", cwd=clone, check=False).returncode == 0
    for out in ("data/x.bin", "model.bin"):
        assert (clone / out).read_bytes() == (built / out).read_bytes()
    assert not _run(["git", "status", "--porcelain", "--untracked-files=no"], clone).stdout  # .dvc/config untouched
    tar.unlink()
    checksum_path(tar).unlink()


def test_a_bundle_of_another_run_is_refused_and_the_one_unpacked_before_stays(clone, tmp_path, monkeypatch, capsys):
    """Issue 65: a well-formed bundle that lacks the outputs this clone's dvc.lock names (another commit's run) is
    refused at `use`, not 37 lines into `dvc pull`; a bundle unpacked before is left as it was."""
    earlier = clone / UNPACKED / "files/md5/aa/kept"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("an earlier bundle's file")
    tar = tmp_path / "other.tar"
    pack(_folder(tmp_path / "other", NAMES), tar)
    code, _, err = _main(clone, monkeypatch, capsys, "use", str(tar))
    commit = _run(["git", "rev-parse", "--short=12", "HEAD"], clone).stdout.strip()
    assert code == 2 and "\n" not in err, err
    assert err.startswith(f"error: {tar}: not the run this clone's dvc.lock names (it lacks 2 of the run's outputs")
    assert err.endswith(f"use the bundle made at commit {commit} (`vitheory-run-{commit}.tar`)")
    assert earlier.read_text() == "an earlier bundle's file"


TWO_STAGES = """\
stages:
  data:
    cmd: python -c "import pathlib; pathlib.Path('data.bin').write_bytes(bytes(range(64)))"
    outs:
      - data.bin
  train:
    cmd: python -c "import pathlib; pathlib.Path('model.bin').write_bytes(pathlib.Path('data.bin').read_bytes() * 2)"
    deps:
      - data.bin
    outs:
      - model.bin
"""


def test_a_published_run_comes_with_the_clone_and_rebuilds_only_its_quick_stages(tmp_path, monkeypatch, capsys):
    """Issue 65: `publish` pushes the slow stages' outputs (train: no recorded time) into the repository's own
    remote, not the quick ones (data: 0.1 s); a fresh clone's `dvc pull --allow-missing && dvc repro` rebuilds
    the data only, and everything hashes as dvc.lock says. A second run's publish drops the first's files."""
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "dvc.yaml").write_text(TWO_STAGES)
    (repo / "docs/stage_times.yaml").write_text("- stage: data\n  seconds: 0.1\n")
    run_and_commit(repo)
    code, said, err = _main(repo, monkeypatch, capsys, "publish")
    assert code == 0 and said.startswith("dvc-remote/: 1 files of 1 outputs") and "0 of an earlier run" in said, err
    _run(["git", "add", "-A"], repo)
    _run(["git", "commit", "-qm", "published"], repo)
    clone = fresh_clone(repo, tmp_path)
    _dvc("pull", "--allow-missing", cwd=clone)
    assert (clone / "model.bin").read_bytes() == (repo / "model.bin").read_bytes() and not (clone / "data.bin").exists()
    rebuilt = _dvc("repro", cwd=clone).stdout
    assert "Running stage 'data'" in rebuilt and "Running stage 'train'" not in rebuilt, rebuilt
    assert _dvc("status", "-q", cwd=clone, check=False).returncode == 0
    assert not _run(["git", "status", "--porcelain"], clone).stdout
    (repo / "dvc.yaml").write_text(TWO_STAGES.replace("* 2", "* 3"))
    _dvc("repro", "-q", cwd=repo)
    code, said, _ = _main(repo, monkeypatch, capsys, "publish")
    assert code == 0 and said.startswith("dvc-remote/: 1 files of 1 outputs") and "(1 of an earlier run dropped)" in said
