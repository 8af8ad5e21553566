"""Meeting RAG: the shared library every Lambda imports (built into the layer)."""
