"""CDK entry point (``cdk.json``): ``cdk synth -c stage=dev`` or ``python infra/app.py`` then deploy ``cdk.out``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Run as a script, Python puts infra/ first on the path, where infra/constructs would shadow the ``constructs``
# library: the repository root takes its place, so ``infra`` is a package and ``constructs`` the library.
sys.path[0] = str(Path(__file__).resolve().parents[1])

import aws_cdk as cdk  # noqa: E402

from infra import node as _node  # noqa: E402,F401  (JSII_NODE before aws_cdk)
from infra.stack import build  # noqa: E402


def main() -> None:
    # The CDK CLI sets CDK_OUTDIR; run directly, the assembly lands in cdk.out/ for ``cdk deploy --app cdk.out``.
    app = cdk.App(outdir=os.environ.get("CDK_OUTDIR", "cdk.out"))
    build(app)
    app.synth()


if __name__ == "__main__":
    main()
