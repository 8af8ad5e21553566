"""The CDK app of meeting-rag: one construct per concern.

Importing the package points jsii at the Node.js wheel (``infra.node``) before any ``aws_cdk`` import.
"""

from infra import node as _node  # noqa: F401
