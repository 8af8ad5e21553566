"""The shared library (``layers/rag``) and its runtime dependencies as one Lambda layer, bundled without Docker."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.bundling import LIBRARY_DIR, LayerBundler, layer_hash, local_bundling
from infra.defaults import ARCHITECTURE, PYTHON_RUNTIME


class LibraryLayer(Construct):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            description="meeting-rag library (layers/rag) with its runtime dependencies; boto3 from the runtime",
            code=lambda_.Code.from_asset(
                str(LIBRARY_DIR),
                asset_hash_type=cdk.AssetHashType.CUSTOM,
                asset_hash=layer_hash(),
                bundling=local_bundling(LayerBundler()),
            ),
            compatible_runtimes=[PYTHON_RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
