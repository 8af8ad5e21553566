"""The CDK app of meeting-rag: one construct per concern."""
