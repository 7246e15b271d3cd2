"""Stage `check_params`: the whole params.yaml, checked before any other stage computes: every key
known, every value in range, every rule across sections (vitheory.params). Its output says only that
the check passed, so it never changes and an edit reruns just the stages that list the edited keys."""

import argparse

from vitheory.core.artifacts import atomic_path
from vitheory.core.cli import PARAMS_FILE, run_stage
from vitheory.core.config import ParamsView
from vitheory.core.paths import artifact
from vitheory.params import SECTIONS, load_params

PARAMS = SECTIONS  # every section: the stage lists the whole params.yaml

PASSED = "params.yaml: every key known, every value in range, every rule across sections holds\n"


def main(params: ParamsView, args: argparse.Namespace) -> None:
    load_params(PARAMS_FILE)  # beyond the view: unknown keys and the rules across sections
    with atomic_path(artifact("params_check")) as tmp:
        tmp.write_text(PASSED)


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
