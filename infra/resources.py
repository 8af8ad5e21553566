"""What every application construct builds on, passed as one typed props object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from infra.defaults import python_function
from infra.permissions import grant_embedding_and_llm

if TYPE_CHECKING:
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_
    from constructs import Construct

    from infra.config import StageConfig
    from infra.constructs.database import Database
    from infra.constructs.network import Network


@dataclass(frozen=True)
class AppResources:
    """The stage's configuration, its network, database and the library layer."""

    config: StageConfig
    network: Network
    database: Database
    layer: lambda_.ILayerVersion

    def app_function(
        self,
        scope: Construct,
        id: str,
        *,
        description: str,
        code: lambda_.Code,
        handler: str,
        service: str,
        memory_mb: int,
        timeout: cdk.Duration,
        environment: dict[str, str] | None = None,
        reserved_concurrency: int,
        chat_model: bool = False,
    ) -> lambda_.Function:
        """A function of the application: in the VPC with the layer, connecting to the database by IAM
        through the proxy, allowed the configured embedding model and, with ``chat_model``, the chat model.

        ``reserved_concurrency`` is required: each warm instance holds one proxy connection, and the sum over the
        functions must fit the proxy's pool (``StageConfig.reserved_concurrency``; infra/README.md, "Capacity")."""
        function = python_function(
            scope,
            id,
            config=self.config,
            description=description,
            code=code,
            handler=handler,
            service=service,
            layer=self.layer,
            vpc=self.network.vpc,
            security_group=self.network.functions_sg,
            memory_mb=memory_mb,
            timeout=timeout,
            environment={"RAG_DATABASE_IAM_URL": self.database.iam_url, **(environment or {})},
            reserved_concurrency=reserved_concurrency,
        )
        self.database.grant_connect(function)
        grant_embedding_and_llm(scope, function, self.config, chat_model=chat_model)
        return function
