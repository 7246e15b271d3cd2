"""Stage `generate`: the [LI23] token data, train and test splits, with a metadata sidecar."""

import argparse

from vitheory.core.cli import run_stage
from vitheory.core.config import ParamsView
from vitheory.core.paths import artifact
from vitheory.li23 import tokens
from vitheory.li23.params import LiTokensParams

PARAMS = {"generate.li_tokens": LiTokensParams}


def main(params: ParamsView, args: argparse.Namespace) -> None:
    tokens.write(params.generate.li_tokens, artifact("li_tokens"))


if __name__ == "__main__":
    run_stage(main, argparse.ArgumentParser(description=__doc__), PARAMS)
