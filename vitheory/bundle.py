"""The committed run's data and checkpoints as one file, for a reviewer who has no DVC remote to pull from.

    python -m vitheory.bundle make [OUT.tar]    # where the run's DVC cache is: OUT.tar and OUT.tar.sha256
    python -m vitheory.bundle use OUT.tar       # in a fresh clone: check, unpack, add it as DVC's remote
    dvc pull && python -m vitheory.verify       # then: the outputs dvc.lock names, and the check of them
    python -m vitheory.bundle publish           # where the run was made: its slow outputs into dvc-remote/,
                                                # committed with it; a clone: `dvc pull --allow-missing`

`make` pushes exactly the outputs the committed dvc.lock names (`dvc push` into a temporary folder, a DVC
remote like any other) and packs that folder into a tar with the same bytes every time (names sorted,
every mtime, owner and mode fixed, no compression: the checkpoints hardly compress), with a `sha256sum`
line beside it. It refuses when dvc.lock differs from the commit (the bundle would not be the committed
run's) and when the cache here lacks any file of the run. `use` checks the tar against its `.sha256`
before anything else, unpacks it into `.vitheory/bundle/` (git-ignored) and makes that folder DVC's
default remote in `.dvc/config.local` (`dvc remote add --local -d`), so the committed `.dvc/config` stays
as it is; it refuses a bundle that lacks an output this clone's dvc.lock names (another commit's run) before
replacing what was unpacked before. Every failure (a full disk too) is one `error:` line naming the file and what to do, exit code 2.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vitheory.core.artifacts import atomic_path
from vitheory.core.cli import ENVIRONMENT_FAULTS
from vitheory.core.errors import VitheoryError

REMOTE = "bundle"  # the DVC remote `use` adds
PUBLISHED = Path("dvc-remote")  # the repository's own DVC remote: the committed run's slow outputs, in git
PUBLISHED_REMOTE = "run"
QUICK_SECONDS = 5.0  # a stage that rebuilds faster is left to `dvc repro`: the data stages, none that trains (the
# fastest training, train_li_vit, took 17 s in the committed run), so a clone that pulls trains nothing
CLONE_STEPS = "dvc pull --allow-missing && dvc repro && python -m vitheory.verify"
UNPACKED = Path(".vitheory/bundle")
CACHE_FILES = "files/md5/"  # where DVC 3 keeps every file of a remote; a bundle holds nothing else
NEXT_STEP = "dvc pull && python -m vitheory.verify"


def _run(command: list[str], root: Path) -> str:
    """stdout of a git or dvc command; its last stderr line as an error when it fails or is missing."""
    try:
        done = subprocess.run(command, cwd=root, capture_output=True, text=True)
    except FileNotFoundError:
        raise VitheoryError(f"`{command[0]}` is not installed; install it and rerun") from None
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise VitheoryError(f"`{' '.join(command)}` failed: {said}")
    return done.stdout


def require_dvc() -> None:
    """An error, before anything is written, when DVC is not installed in this Python."""
    if importlib.util.find_spec("dvc") is None:
        raise VitheoryError(f"dvc is not installed in {sys.executable}; `pip install -r requirements.txt` "
                            "and rerun")


def committed_run(root: Path) -> str:
    """The commit whose dvc.lock the workspace holds; an error when dvc.lock differs from it."""
    commit = _run(["git", "rev-parse", "HEAD"], root).strip()
    if _run(["git", "status", "--porcelain", "--", "dvc.lock"], root).strip():
        raise VitheoryError(f"dvc.lock differs from commit {commit[:12]}: commit the run (or "
                            "`git checkout dvc.lock`) and make the bundle again")
    return commit


def push_run(root: Path, folder: Path) -> None:
    """`dvc push` of every cached output dvc.lock names into `folder`; an error naming the outputs that the
    cache here lacks (DVC would push the rest and only warn)."""
    from dvc.exceptions import DvcException  # imported here: DVC is slow to import and only this needs it
    from dvc.repo import Repo

    try:
        with Repo(str(root), config={"remote": {REMOTE: {"url": str(folder.resolve())}}}) as repo:
            outs = [out for stage in repo.index.stages for out in stage.outs if out.use_cache]
            lacking = _lacking(Path(repo.cache.local.path), outs)
            if lacking:
                raise VitheoryError(f"the DVC cache here lacks files of {lacking}; make the bundle where the run "
                                    "was made, or `dvc repro` first")
            repo.push(remote=REMOTE)
    except DvcException as err:
        raise VitheoryError(f"`dvc push` failed: {err}") from None
    lacking = _lacking(folder / CACHE_FILES, outs)
    if lacking:
        raise VitheoryError(f"`dvc push` left out files of {lacking}; make the bundle again")


def _lacking(files: Path, outs: list[Any]) -> str:
    """Which of DVC's outputs `files` (a cache's or remote's `files/md5/`) lacks, in words; "" when none."""
    paths = sorted(str(out.def_path) for out in outs if not _holds(files, out.hash_info.value))
    if not paths:
        return ""
    return f"{len(paths)} of the run's outputs ({', '.join(paths[:3])}{', ...' if len(paths) > 3 else ''})"


def _holds(files: Path, md5: str | None) -> bool:
    """Whether `files` holds the object `md5` and, for a folder's `.dir` listing, every file in it."""
    if md5 is None:  # dvc.lock records no hash: the stage never ran
        return False
    path = files / md5[:2] / md5[2:]
    if not path.is_file():
        return False
    return not md5.endswith(".dir") or all(_holds(files, entry["md5"]) for entry in json.loads(path.read_text()))


def checksum_path(tar: Path) -> Path:
    return tar.with_name(tar.name + ".sha256")


def sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def pack(folder: Path, tar: Path) -> str:
    """Write every file under `folder` into `tar`, the same bytes for the same files, and its
    `sha256sum` line beside it; the digest."""
    names = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())
    with atomic_path(tar) as tmp, tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as archive:
        for name in names:
            # a bare TarInfo: mtime 0, owner 0 and no names, mode 0o644; only the name and size vary
            info = tarfile.TarInfo(name)
            info.size = (folder / name).stat().st_size
            with open(folder / name, "rb") as handle:
                archive.addfile(info, handle)
    digest = sha256(tar)
    with atomic_path(checksum_path(tar)) as tmp:
        tmp.write_text(f"{digest}  {tar.name}\n")  # `sha256sum -c` reads it too
    return digest


def check(tar: Path) -> None:
    """An error unless `tar` hashes as the `.sha256` beside it says."""
    recorded_in = checksum_path(tar)
    if not tar.is_file():
        raise VitheoryError(f"{tar}: no such file; name the bundle's path (a `vitheory-run-*.tar`)")
    if not recorded_in.is_file():
        raise VitheoryError(f"{recorded_in}: missing; put the .sha256 file that came with the bundle beside it")
    recorded = recorded_in.read_text().split()[:1]
    if recorded != [sha256(tar)]:
        raise VitheoryError(f"{tar}: its sha256 differs from {recorded_in}'s: the file is damaged or not that "
                            "bundle; fetch both again")


def run_outputs(root: Path) -> list[Any]:
    """The DVC-cached outputs that dvc.lock names here."""
    from dvc.repo import Repo  # imported here: DVC is slow to import

    with Repo(str(root)) as repo:
        return [out for stage in repo.index.stages for out in stage.outs if out.use_cache]


def unpack(tar: Path, folder: Path, accept: Callable[[Path], None] = lambda files: None) -> int:
    """Unpack a checked bundle into `folder` (replacing it only once `accept` took the unpacked files; nothing
    is left of a tar that fails half-way); the number of files."""
    try:
        with tarfile.open(tar, "r:") as archive, atomic_path(folder) as tmp:  # uncompressed, as `make` packs it
            members = archive.getmembers()
            strays = [m.name for m in members if not (m.isfile() and m.name.startswith(CACHE_FILES))]
            if strays:
                raise VitheoryError(f"{tar}: not a DVC cache bundle (it holds {strays[0]}); make it with "
                                    "`python -m vitheory.bundle make`")
            tmp.mkdir()
            archive.extractall(tmp, filter="data")
            accept(tmp / CACHE_FILES)
    except (tarfile.TarError, EOFError) as err:
        raise VitheoryError(f"{tar}: not a readable tar ({err}); make it again with "
                            "`python -m vitheory.bundle make`") from None
    return len(members)


def make(root: Path, out: Path | None) -> str:
    """The bundle of the committed run's DVC outputs; what was written, in one line."""
    require_dvc()
    commit = committed_run(root)
    out = out or root / f"vitheory-run-{commit[:12]}.tar"
    with tempfile.TemporaryDirectory(prefix="vitheory-bundle-") as folder:
        push_run(root, Path(folder))
        count = sum(1 for path in Path(folder).rglob("*") if path.is_file())
        digest = pack(Path(folder), out)
    return (f"{out}: {count} files of commit {commit[:12]}'s run, {out.stat().st_size / 1e6:.1f} MB, sha256 "
            f"{digest[:12]}... ({checksum_path(out).name}); in a clone: `python -m vitheory.bundle use {out.name}"
            f"` then `{NEXT_STEP}`")


def use(root: Path, tar: Path) -> str:
    """Check and unpack the bundle and make it DVC's default remote here; what was done, in one line."""
    if not (root / ".dvc").is_dir():
        raise VitheoryError(f"{root.resolve()}: not a DVC repository (no .dvc/); run this in the clone's root")
    require_dvc()
    check(tar)
    folder = (root / UNPACKED).resolve()
    outs = run_outputs(root)

    def of_this_run(files: Path) -> None:
        lacking = _lacking(files, outs)
        if lacking:
            commit = _run(["git", "rev-parse", "--short=12", "HEAD"], root).strip()
            raise VitheoryError(f"{tar}: not the run this clone's dvc.lock names (it lacks {lacking}); use the "
                                f"bundle made at commit {commit} (`vitheory-run-{commit}.tar`)")

    count = unpack(tar, folder, of_this_run)
    _run([sys.executable, "-m", "dvc", "remote", "add", "--local", "-d", "-f", REMOTE, str(folder)], root)
    return f"{UNPACKED}/: {count} files, DVC's default remote `{REMOTE}` (.dvc/config.local); now: `{NEXT_STEP}`"


def published_outputs(root: Path) -> list[Any]:
    """The DVC-cached outputs of the stages that take QUICK_SECONDS or more to rebuild by the committed run's
    times (docs/stage_times.yaml; a stage without a recorded time counts as slow); the quick ones (the data
    stages, a second or two each) are left to `dvc repro`."""
    from dvc.repo import Repo

    from vitheory.reviewing import read_stage_times, stage_seconds  # the reviewer's guide's data

    seconds = stage_seconds(read_stage_times(root))
    with Repo(str(root)) as repo:
        return [out for stage in repo.index.stages for out in stage.outs
                if out.use_cache and seconds.get(stage.name, math.inf) >= QUICK_SECONDS]


def _referenced(files: Path, md5: str) -> set[str]:
    """The objects (`ab/cdef...`) an output's hash stands for: itself and, for a folder, every file in it."""
    named = {f"{md5[:2]}/{md5[2:]}"}
    if md5.endswith(".dir"):
        named |= {f"{entry['md5'][:2]}/{entry['md5'][2:]}" for entry in json.loads((files / md5[:2] / md5[2:]).read_text())}
    return named


def publish(root: Path) -> str:
    """Push the run's slow outputs into the repository's own DVC remote (PUBLISHED, the default remote of
    .dvc/config, a path relative to it), drop every file no output of this dvc.lock names (a previous run's),
    and say what it holds; committed with the run, a clone's `dvc pull --allow-missing` brings them."""
    from dvc.exceptions import DvcException
    from dvc.repo import Repo

    require_dvc()
    folder = root / PUBLISHED
    _run([sys.executable, "-m", "dvc", "remote", "add", "-d", "-f", PUBLISHED_REMOTE, PUBLISHED.as_posix()], root)
    outs = published_outputs(root)
    try:
        with Repo(str(root)) as repo:
            lacking = _lacking(Path(repo.cache.local.path), outs)
            if lacking:
                raise VitheoryError(f"the DVC cache here lacks files of {lacking}; publish where the run was made")
            repo.push(targets=[str(out.fs_path) for out in outs], remote=PUBLISHED_REMOTE)
    except DvcException as err:
        raise VitheoryError(f"`dvc push` failed: {err}") from None
    files = folder / CACHE_FILES
    named = set().union(*(_referenced(files, out.hash_info.value) for out in outs)) if outs else set()
    dropped = 0
    for path in sorted(files.rglob("*")) if files.is_dir() else ():
        if path.is_file() and f"{path.parent.name}/{path.name}" not in named:
            path.unlink()
            dropped += 1
    size = sum(path.stat().st_size for path in files.rglob("*") if path.is_file()) if files.is_dir() else 0
    return (f"{PUBLISHED}/: {len(named)} files of {len(outs)} outputs, {size / 1e6:.1f} MB ({dropped} of an earlier "
            f"run dropped); commit it with dvc.lock and .dvc/config; a clone then runs `{CLONE_STEPS}`")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vitheory.bundle", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    made = commands.add_parser("make", help="pack the committed run's DVC outputs into OUT.tar (+ OUT.tar.sha256)")
    made.add_argument("out", nargs="?", type=Path, help="the tar to write (vitheory-run-<commit>.tar by default)")
    used = commands.add_parser("use", help="check and unpack a bundle, and make it DVC's default remote here")
    used.add_argument("tar", type=Path, help="the bundle; its .sha256 file lies beside it")
    commands.add_parser("publish", help=f"push the run's slow outputs into {PUBLISHED}/, the repository's own DVC "
                        "remote, dropping an earlier run's")
    args = parser.parse_args(argv)
    try:
        print(make(Path("."), args.out) if args.command == "make" else use(Path("."), args.tar)
              if args.command == "use" else publish(Path(".")))
    except VitheoryError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a full disk or a read-only folder: the machine's to fix, not a traceback
        if err.errno not in ENVIRONMENT_FAULTS:
            raise
        print(f"error: cannot write {err.filename}: {err.strerror}; {ENVIRONMENT_FAULTS[err.errno]} and rerun",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
