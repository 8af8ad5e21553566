"""Moving a corpus to another embedding model without downtime (docs/reembedding.md).

The new model's vectors are written beside the old ones (``embedding_alt`` on every embedded table), from
manifests of every row's text processed by Amazon Bedrock's batch inference on AWS (at the batch price) or by
the local model here; once every row has one, one transaction swaps the columns and the active model
(``embedding_space``), so searches move from the old model to the new one at once and never compare the two.
"""
