"""The HTTP query API (Powertools APIGatewayHttpResolver), its models and the caller's identity."""
