"""The searchable types of ``POST /v1/search``: the registry's kinds (``rag.knowledge``) by name.

A kind names the table, the text a result shows as ``content``, the columns it carries in
``metadata`` and how its keyword side is ranked; one SQL template in ``rag.search.engine``
serves them all. In SQL the row is aliased ``c`` and its document ``d``.
"""

from __future__ import annotations

from rag.knowledge import KINDS, Kind

SearchableType = Kind

SEARCHABLE_TYPES: dict[str, SearchableType] = {kind.name: kind for kind in KINDS}
