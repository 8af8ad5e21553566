"""The staged backfill: each stage claims a batch of documents and moves them one status on.

    segment  raw_ingested -> segmented   topic segments (LLM, TextTiling on embeddings, or headings)
    embed    segmented    -> embedded    chunk vectors missing for the configured model + segment summaries
    extract  embedded     -> extracted   decisions, risks, opportunities, tasks (LLM or rules) + vectors

A batch is one transaction: documents are claimed with ``FOR UPDATE SKIP LOCKED`` (a
concurrent runner skips them; a crash before the commit releases them untouched), each
document is processed inside a savepoint (its error is recorded in
``documents.backfill_error`` and the batch goes on), and every write replaces what the
document had, so running a batch twice writes nothing twice. ``rag.backfill.stages``
builds a stage by name; ``rag.backfill.runner.run_stage`` runs one batch.
"""
