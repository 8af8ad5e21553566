"""The HTTP query API (Powertools APIGatewayHttpResolver), its models and the caller's identity."""

API_VERSION = "1.0.0"  # the OpenAPI document's, /config.json's and /health's
