"""What says a risk is over ("the certification risk is gone", "that takes the heritage problem off the table"): a
report on an earlier risk, no new decision or risk (rag.backfill.changes records it, rag.timeline closes the risk it
names)."""

from __future__ import annotations

from rag.backfill.cues import any_of

_NOUN = r"(?:risk|concern|issue|worry|problem|fear|threat|scare|saga|clash|exposure|overspend|gap|blocker|thing)"
_STATE = (
    r"(?:closed|gone|resolved|retired|mitigated|off\s+the\s+table|behind\s+us|solved|sorted|dealt\s+with|covered|"
    r"done\s+with|over|taken\s+care\s+of|handled|fixed)"
)

CLOSED = any_of(
    # "the certification risk is gone", "the payment problem's solved", "the wet-ground worry has gone"
    rf"\b(?:{_NOUN}|that\s+one|this\s+one)\b.{{0,40}}?\b(?:is|are|'s|as|be|has|have)\s+(?:now\s+|simply\s+|also\s+"
    rf"|all\s+|officially\s+|definitely\s+|been\s+)?{_STATE}\b(?!\s+(?:yet|for\s+now))",
    r"\b(?:risk|concern|worry|problem|fear)\s+gone\b|\bdone\s+and\s+closed\b|\bstop(?:ped)?\s+worrying\b",
    r"\b(?:isn't|is\s+not|wasn't|not)\s+(?:a|an)\s+(?:risk|concern|issue|worry|problem)\s+after\s+all\b",
    r"\b(?:somebody|someone)\s+else's\s+problem\b",
    r"\b(?:call(?:ing)?|consider(?:ing)?|mark(?:ing)?)\b.{0,50}\b(?:risk|concern|issue|problem|worry|one|that|this)"
    r"\s+(?:as\s+)?closed\b",
    r"\bno\s+longer\s+(?:a\s+|an\s+)?(?:risk|concern|issue|worry|problem|blocker)\b",
    r"\b(?:not|isn't|aren't)\s+(?:\w+\s+){0,2}(?:risk|concern|issue|worry|problem)\s+any\s*more\b",
    r"\bstops?\s+being\s+(?:our|a|an|my)\s+problem\b|\bno\s+longer\s+the\s+thing\s+keeping\b",
    r"\b(?:clos(?:e|ing)|retir(?:e|ing))\s+(?:that|this|the)\b.{0,40}?\b(?:risk|concern|worry|issue|one)\b",
    r"^(?:so\s+)?no\s+(?:clash|conflict)\b|^(?:so\s+)?no\s+(?:\w+\s+)?(?:risk|drama)(?:\s+at\s+all)?[.!]?$",
    r"\bnothing\s+to\s+worry\s+about\b",
    # a worry that goes away, comes off the list, is taken off the table, carried or worried about no more
    rf"\b{_NOUN}\b.{{0,30}}?\b(?:goes|has\s+gone|have\s+gone)\s+away\b|\b(?:worry|risk|concern)\s+can\s+(?:go|come\s+off)\b",
    r"\b(?:comes?|came|taken?|took)\s+off\s+the\s+(?:worry|risk)\s+(?:list|register|log)\b|\boff\s+the\s+risk\s+list\b",
    rf"\b(?:takes?|took|taking|take)\s+(?:the|that|this|our|my)\b.{{0,40}}?\b{_NOUN}\s+(?:off\s+the\s+(?:table|list)|away)\b",
    rf"\b{_NOUN}\s+(?:is\s+)?off\s+the\s+(?:table|list)\b",
    r"(?:\bnot|n't)\s+(?:\w+\s+){0,2}(?:worried|worry|carry)\b.{0,40}?\bany\s*(?:more|longer)\b",
    r"\b(?:far|much|a\s+lot)\s+less\s+worried\b|\bnot\s+worried\s+about\s+\w+(?:\s+\w+)?\s+now\b",
    rf"\b(?:gets?|got)\s+rid\s+of\s+(?:my|our|the|that|this|your)\b.{{0,30}}?\b{_NOUN}\b",
    rf"\b(?:takes?\s+care\s+of|deals?\s+with|sorts?(?:\s+out)?|solves?)\s+(?:the|that|our|my)\b.{{0,30}}?\b{_NOUN}\b",
    rf"\b{_NOUN}\b.{{0,60}}?\bgoes\s+with\s+it\b",
    # what was feared did not happen: "the strike didn't touch us", "the shutdown didn't cost us anything"
    r"\b(?:didn't|did\s+not|never)\s+(?:touch|affect|hurt|hit|cost)\s+(?:us|them|anything|any)\b",
)
