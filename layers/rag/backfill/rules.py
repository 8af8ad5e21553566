"""The offline extractor: transparent cue phrases and patterns, one sentence at a time.

It favours precision over recall (it misses what is implied, it rarely invents) and
its precision is measured on a hand-labelled sample (tests/fixtures/backfill/
labelled_sentences.jsonl, reported by tests/backfill/measure_rules_precision.py).

A sentence, after leading fillers ("okay, so, right, ...") are dropped, is a

- decision when it says so: "we decided / agreed", "we've decided", "let's / we'll go
  with", "we're going with", "the (final) decision is", "settled on", "let's decide",
  "let's take / use / keep / stick with", or it starts with "Agreed" (a bare "Agreed."
  takes the previous sentence as what was agreed); or a plan stated as settled in the
  present ("we move / ship / drop / keep ...", "we're launching ..."), a constraint stated
  as fixed ("X is capped at / adopted / approved", "the tool is X, not Y", "X stays open /
  moves to ...", "it's a go"). Not: "haven't decided", "let's not", "keep an eye on",
  the chair giving the floor ("we go back to Mr. ...").
  Status "agreed"; rationale: the clause after "because" / "since".
- risk: "risk(s)", "concern(ed)", "worried / worry", "danger", "bottleneck", "blocker",
  "might not", "may not", "could delay / slip / fail / break / push", "the problem /
  issue is that", "if ... slips / fails / misses", a condition followed by a harm ("if X,
  we can't / it could brick / they're late"; not "if you ..."). Not: "no risk", "low risk",
  "not sure", "risk assessment", a short alarm without content ("that's a risk too"). Category from keywords (schedule, cost, technical,
  security, supplier, people); mitigation: a following sentence of the segment that
  starts "we can / we could / to mitigate".
- opportunity: "opportunity", "we could also", "potential to / there's potential",
  "could save", "upsell", "new market", "could expand / grow / win / sell". Type from
  keywords (sales, cost saving, product, hiring, partnership).
- task: a commitment ("I'll / I will / I'm going to <verb>": the speaker), an
  assignment ("<Name> will", "the <role> will", "<Name>, please / can you", "action item for <Name>"), a
  request opening the sentence ("please", "can / could you": the addressee when named, else the next
  speaker when they answer "sure / will do / I'll"; not "please note / wait"), or "we need to" with a
  deadline; a question is no one's commitment. Due date: the
  deadline the sentence names, resolved against the meeting date (rag.backfill.due_dates).
  Assignee: the person's one form among the meeting's speakers (rag.backfill.owners).
Questions are never decisions, risks or opportunities.

``extract_by_rules`` adds to the patterns' kinds those the sentence classifier (rag.backfill.classifier, trained on
labelled meetings) finds above its precision thresholds (``classify_with_model``); the fields come from the helpers below.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from rag.backfill.due_dates import due_date, names_a_date
from rag.backfill.models import ItemKind, KnowledgeItem
from rag.backfill.owners import People
from rag.backfill.text import clip
from rag.backfill.units import Unit

__all__ = ["Match", "classify", "clean", "due_date", "extract_by_rules"]

FILLERS = re.compile(
    r"^(?:(?:okay|ok|so|right|good|well|yeah|yes|sure|then|and|alright|great|fine|uh|um|er|ah|hmm|mm)\b[,.!:]?\s*)+", re.I
)


def _any(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.I)


# Verbs a group settles a plan with, in the present tense ("we ship", "we move", "we drop"); "we go" only with
# "with / for / back to / ahead" ("we go to the shop" settles nothing).
SETTLED_VERBS = (
    r"ship|move|keep|stay|drop|use|close|open|lower|raise|cut\s+over|switch|launch|cap|freeze|cancel|postpone|skip|"
    r"adopt|approve|reject|pick|choose|target|price|fund|replace|remove|release|stick|upgrade|downgrade|submit|rent|book|"
    r"hire|set|add|hold|go\s+(?:with|for|back\s+to|ahead|digital)"
)
# ... and in the future tense ("we'll keep the paper rota", "we'll rent the tent"): the same verbs and a few that
# only settle a plan when promised ("we'll run it for one period"); "we'll see / talk / look" settle nothing.
SETTLED_VERBS_FUTURE = rf"{SETTLED_VERBS}|run|do\s+(?:it|the|that|this)\b(?!\s+(?:later|next|again))|limit|charge|sell|offer|require|allow|stop\b(?!\s+(?:there|here))"
# What "let's" settles: a choice ("let's book the quartet", "let's go with March"), not running the meeting
# ("let's take a break", "let's move on", "let's keep an eye on it").
LETS_SETTLE = (
    r"book|rent|hire|use|take(?!\s+(?:a|five|ten|two|it|that|this)\b)|keep(?!\s+(?:it|an?)\s)|stick\s+with|set|make\s+it|drop|add|cut|skip|"
    r"cancel|launch|ship|price|cap|switch|stay|hold|run\s+(?:it|the|with)|target|lock\s+in|go\s+(?:with|for|ahead|digital)"
)
SETTLED_VERBS_ING = (
    r"(?:launching|shipping|moving|keeping|staying|dropping|using|closing|switching|cutting\s+over|going\s+with|"
    r"going\s+for|going\s+back\s+to|sticking\s+with|postponing|cancell?ing|skipping|adopting)"
)
DECISION = _any(
    r"\bwe(?:'ve| have)?\s+(?:decided|agreed)\b",
    r"\b(?:let's|let us|we'll|we will|we're going to|we are going to)\s+go\s+(?:with|for)\b",
    r"\bwe(?:'re| are)\s+going\s+with\b",
    r"\b(?:the\s+)?(?:final\s+)?decision\s+is\b",
    r"\bsettled\s+on\b",
    r"\blet's\s+decide\b",
    rf"(?:^|[,;:]\s+|\bthen\s+)let's\s+(?:{LETS_SETTLE})\b",
    rf"^(?:(?:then|so|and|but|yeah|ok(?:ay)?|right|fine),?\s+)*we(?:'ll|\s+will)\s+(?:(?:just|all|simply|now)\s+)?(?:{SETTLED_VERBS_FUTURE})\b",
    r"^agreed\b",
    # A plan stated as settled, in the present: "We move the launch to May 19", "we're launching on May 5",
    # "we stay on the C3", "we go back to the old cap" (a verb of choosing or changing a plan, not "we go to lunch").
    rf"^(?:(?:then|so|and|but|yeah|ok(?:ay)?|right|fine|with\s+[^,]{{1,60}}),?\s+)*we\s+(?:(?:now|just|all|simply)\s+)?(?:{SETTLED_VERBS})\b",
    rf"^(?:(?:then|so|and|but|yeah|ok(?:ay)?|right|fine|with\s+[^,]{{1,60}}),?\s+)*we're\s+(?:{SETTLED_VERBS_ING})\b",
    # ... and the same after a reason: "Retail wants it before May, so we're launching on May 5"
    rf"[,;:]\s+(?:so|then)\s+we\s+(?:{SETTLED_VERBS})\b|[,;:]\s+(?:so|then)\s+we're\s+(?:{SETTLED_VERBS_ING})\b",
    # A constraint or outcome stated as fixed: "overtime is capped at $1.2 million", "the budget is adopted",
    # "the target warehouse is Snowflake, not BigQuery", "the pool stays open", "then it's a go".
    r"\b(?:is|are)\s+(?:now\s+)?(?:capped|adopted|approved|frozen|locked\s+in|confirmed|final|postponed|cancell?ed|"
    r"scrapped|switched\s+off|carried|ratified|signed\s+off)\b(?!\s+(?:by|if|when|whether|yet)\b)",
    # (a diagnosis is not: "the problem is the cable, not the port")
    r"^(?:(?:then|so|okay|ok),?\s+)*(?:the|our)\s+(?![\w -]{0,30}\b(?:problem|issue|question|point|reason|bug|cause|"
    r"difference|trick|catch)\b)[\w -]{2,40}\s+is\s+[\w.-]+(?:\s+[\w.-]+)?,\s+not\s+[\w.-]+",
    # (where a thing "goes to" is usually an address: "the email goes to everyone")
    r"^(?:(?:then|so|okay|ok),?\s+)*(?:the|our|all)\s+[\w -]{2,40}\s+(?:stays?\s+(?:open|closed|nightly|weekly|hourly|"
    r"at|with|on|as)|moves?\s+(?:to|into|back\s+to)|go(?:es)?\s+(?:into|back\s+to|ahead))\b",
    r"^(?:(?:then|so|okay|ok),?\s+)*(?:it's|that's)\s+a\s+go\b",
)
# Plain statements of the plan, which meetings settle without saying "decide": a date something happens on
# ("the pilot goes live on Monday the 2nd of March", "go-live moves to the 30th"), an amount something is set at
# ("tickets are a hundred and fifty dollars this year", "the Switch price is 24.99"), and what the chair says after
# closing a discussion ("Okay. Nights will join in phase two", "night staff are in the pilot from day one, then").
# Each holds only said plainly: a hedge, a condition, the past or a question makes it talk about a plan, not one.
_SUBJECT = r"^(?!(?:I|you|it|that|this|there|here|where|how|who|he|she|they|which|what|we|let's)\b)(?:the\s+|our\s+)?[\w'-]+(?:\s+[\w'-]+){0,4}?\s+"
# A date something starts, moves or goes live: settled when said plainly.
SCHEDULED = re.compile(
    _SUBJECT + r"(?:goes\s+live|go\s+live|launch(?:es)?|moves?\s+(?:back\s+)?to|comes?\s+onto|joins?|"
    r"will\s+(?:go\s+live|launch|move\s+to|join))\b",
    re.I,
)
# A date something is on, starts or opens: settled only when it closes a discussion ("Good. The gala is on
# Saturday, October 17th"); said in passing it is news ("homecoming is on the 24th").
ON_A_DATE = re.compile(
    _SUBJECT + r"(?:(?:is|are|will\s+be)\s+(?:now\s+)?(?:on|from)|opens?|starts?|begins?|happens?|"
    r"will\s+(?:open|start|begin|happen|run))\b",
    re.I,
)
AMOUNT = r"(?:[$€£]\s?\d|\d|(?:a|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)\b)"
SET_AMOUNT = re.compile(
    r"\b(?:price|prices|tickets?|fee|fees|budget|cap|goal|target|rate|deposit|floor|ceiling|limit|minimum|maximum)\b"
    rf"[^,.;?]{{0,30}}?\b(?:is|are|will\s+be|go(?:es)?\s+(?:up\s+|down\s+)?to|stays?\s+at|(?:is|are)\s+set\s+at)\s+(?:now\s+)?{AMOUNT}",
    re.I,
)
# "Okay. ..." / "Right, ..." / "... , then.": a statement that closes a discussion.
CLOSING_MARKER = re.compile(r"^(?:okay|ok|right|fine|fair|good|alright|all\s+right|then)\b[,.!]?\s", re.I)
BARE_MARKER = re.compile(r"^(?:okay|ok|right|fine|fair|good|alright|all\s+right|agreed|done|decided)[.!]?$", re.I)
CONCLUDES = re.compile(r",\s+then[.!]?$", re.I)
PLAN_STATEMENT = re.compile(_SUBJECT + r"(?:will|'ll|(?:is|are)\s+(?:in|on)|goes|moves?|stays?|comes?|joins?)\b", re.I)
HEDGED = re.compile(
    r"\b(?:I\s+think|I\s+guess|I\s+suppose|I'd|maybe|perhaps|probably|possibly|might|could|would|should|not\s+sure|"
    r"if|unless|whether|was|were|used\s+to|last\s+year|so\s+far|currently|at\s+the\s+moment|typically|usually|hopefully|"
    r"ready|done|finished|available|late|expect\w*|predict\w*|can|says?|said|told|thinks?|reckons?|cannot|never)\b"
    r"|n't\b|(?<!,\s)\bnot\b",
    re.I,
)
NOT_DECISION = _any(
    r"\b(?:haven't|have\s+not|not\s+yet|didn't|did\s+not)\s+(?:\w+\s+)?(?:decided|agreed)\b",
    r"\blet's\s+not\b",
    # watching is not deciding: "let's keep an eye on that one", "let's keep it in mind"
    r"\bkeep(?:ing)?\s+(?:an\s+eye|track|(?:it|that|this)\s+in\s+mind|\w+ing\b)",
    # running the meeting: "we move on", "we pick this up next week", "we stick to the agenda"
    r"\bwe(?:'re|'ll|\s+will)?\s+(?:(?:now|just)\s+)?(?:mov(?:e|ing)\s+on|pick(?:ing)?\s+(?:this|that|it)\s+up|stick(?:ing)?\s+to\s+the\s+agenda|"
    r"open(?:ing)?\s+(?:the|this)\s+(?:meeting|call|session)|clos(?:e|ing)\s+(?:the|this)\s+(?:meeting|call|session))\b",
    # the chair giving the floor: "we go back to Mr. Ortiz", "we now move to questions", "the floor goes to"
    r"\b(?:move|moves|go|goes)\s+(?:back\s+)?to\s+(?:Mr|Ms|Mrs|Dr|Senator|Minister|Madam|questions?|item|"
    r"the\s+(?:next|floor|member|minister|chair|leader))\b",
    r"\b(?:floor|question)\s+(?:now\s+)?goes\s+to\b",
    # a habit is not a decision: "we close the office at six on Fridays", "we always use the same courier"
    r"\b(?:usually|always|normally|typically|generally|currently|every\s+(?:day|week|month|quarter|year|sprint|release|"
    r"time|morning|evening)|"
    r"on\s+(?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|weekends))\b",
    # a condition is not a decision: "March 2 works as long as the numbers are final"
    r"\b(?:as\s+long\s+as|provided|unless|once|if)\b.{0,80}\b(?:is|are)\s+(?:final|approved|confirmed|adopted|signed\s+off)\b",
)
RISK = _any(
    r"\brisks?\b", r"\bconcern(?:ed|s)?\b", r"\bworr(?:ied|y)\b", r"\bdanger\b", r"\bbottleneck\b", r"\bblocker\b",
    # "the vendor might not support it", "it may not be ready"; not a hedge ("that might not be right", "Jane may not be")
    r"\b(?:might|may)\s+not\s+(?:be\s+(?:able|ready|enough|available|delivered|finished|done|in\s+time|on\s+time)|"
    r"(?!be\b)\w+)",
    r"\bcould\s+(?:delay|slip|fail|break|push)\b",
    r"\b(?:problem|issue)\s+is\s+that\b", r"\bif\b.{0,80}\b(?:slips|fails|misses|breaks)\b",
)  # fmt: skip
# "If the strike goes ahead, the units are two weeks late": a condition, then a harm (generic "if you ..." is advice).
# A short lead-in may come first: "At two hundred and eighty, if we sell out, we can't hit the goal".
CONDITIONAL_RISK = re.compile(
    r"^(?:(?:\w+,?\s+){0,2}?|[\w'$ -]{3,50},\s+)(?:if|unless)\s+(?!you\b)(?P<if>[^,]{3,160}),\s*(?P<then>.+)$", re.I
)
# A condition that something does not happen, then any consequence: "If Coastal Bank doesn't come back, we're
# forty thousand short", "if it isn't fixed by the 17th, Saltgrass has to carry the food upstairs"; not a plan for
# it ("if it doesn't arrive, we'll use the old one" is what to do) nor the chair's "if there are no objections".
NEGATIVE_CONDITION = re.compile(r"n't\b|\b(?:not|no|never|nobody|nothing|fails?)\b", re.I)
COUNTERFACTUAL = re.compile(r"\b(?:had|hadn't|was|wasn't|were|weren't)\b", re.I)
PLANNED_RESPONSE = re.compile(
    r"^(?:then\s+)?(?:we'll|we\s+will|let's|I'll|I\s+will|please|just|you|we\s+(?:can|could|should)|that's\s+fine)\b"
    r"|\b(?:objections?|questions?|comments?)\b",
    re.I,
)
# "The sandbox won't be ready until February", "the QA partner can't start until July 13th": a dependency late.
LATE = re.compile(
    r"\b(?:won't|will\s+not|isn't\s+going\s+to|can't|cannot|couldn't)\s+(?:be\s+(?:ready|done|finished|available|"
    r"delivered|live|up|installed|signed)|start|begin|arrive|ship|deliver|open|finish|get\s+(?:it|them|there))\b"
    r".{0,60}?\b(?:until|till|before|in\s+time)\b",
    re.I,
)
HARM = re.compile(
    r"\b(?:can't|cannot|can\s+not|won't|couldn't|wouldn't|not\s+be\s+able|unable|brick\w*|break\w*|broke|fail\w*|lose|"
    r"loses|losing|lost|nobody|no\s+one|[\w-]+\s+short|miss\w*|late|delay\w*|(?:be|are|run|fall)\s+short|over\s+budget|go\s+over|overrun|hole|slip\w*|"
    r"crash\w*|stuck|run\s+out|too\s+(?:late|expensive|much|slow)|paying\s+(?:list|more|extra|twice|full)|pay\s+more|"
    r"penalt\w*|fined|fines|damage\w*|unmasked|exposed|leak\w*|risk\w*|problem\w*|trouble|behind|collapse|harm\w*|"
    r"suffer\w*|danger\w*|worse|disaster|no\s+(?:way|longer|fallback))\b",
    re.I,
)
# "That's a risk too", "Everything is a risk this year": an alarm that does not say what could go wrong.
VAGUE_RISK = re.compile(r"^(?:that|this|it|everything|which|there)(?:'s|\s+is|\s+are|\s+was)\b", re.I)
NOT_RISK = _any(
    r"\bno\s+risk\b",
    r"\blow\s+risk\b",
    r"\bnot\s+sure\b",
    r"\brisk\s+assessment\b",
    r"\b(?:not|less|no\s+longer)\s+(?:as\s+|so\s+)?worried\b|\b(?:was|were)\s+worried\b",
    r"\b(?:is|are)\s+concerned\b(?!\s+(?:about|that))",
    r"\bconcerned\s+with\b",
    # sympathy and reassurance, not a risk: "I share the concern of my colleague", "don't worry"
    r"\bconcerns?\s+(?:of|for)\s+(?:the\s+)?(?:my|our|his|her|their|so|many|all|people|member|colleague)",
    r"\b(?:share|shares|understand|appreciate|thank\w*)\b.{0,40}\bconcerns?\b|\bconcerned\s+for\b",
    r"\b(?:don't|do\s+not|not\s+to|won't)\s+worry\b|\bworry\s+about\s+(?:that|it|this)\s+later\b",
)
OPPORTUNITY = _any(
    r"\bopportunit(?:y|ies)\b", r"\bwe\s+could\s+also\b", r"\bpotential\s+to\b", r"\bthere(?:'s|\s+is)\s+potential\b",
    r"\bcould\s+save\b", r"\bupsell\b", r"\bnew\s+market\b", r"\bcould\s+(?:expand|grow|win|sell)\b",
    # a gain named further on: "we could replace the lights with LEDs and save $200k a year"
    r"\bwe\s+could\s+(?:[\w'-]+\s+){1,10}?(?:and\s+)?(?:save|sell|charge\s+(?:more|extra|for)|earn|make\s+money)\b",
)  # fmt: skip
# Verbs of running the conversation itself ("I'll start", "I'll pick up on that"), never tasks; "I'll have a
# prototype ready" and "I'll bring two samples" are ("I'll have to say", "I'll bring up" are not).
MEETING_VERBS = (
    r"be|say|admit|bet|guess|think|have\s+to|go\s+with|leave|see|tell\s+you\s+what|start|begin|pick|come|bring\s+(?:up|in)"
    r"|ask\s+(?:you|everyone|all|a\s+question)|try\s+to\s+(?:answer|explain|be|keep|summari[sz]e|clarify|remember)"
    r"|pursue|move|hand|turn|stop|explain|answer|repeat|continue|make\s+an\s+example|keep\s+it|go\s+(?:on|back|through)"
    r"|remind|presume|assume|mention|note|summari[sz]e|introduce|wrap\s+up|show\s+(?:you|that|this)"
    r"|read\s+(?:out|it|that|this)|try\s+and\s+(?:be|answer|explain|keep)|generally|just\s+(?:say|add|mention|note)"
)
SELF_COMMITMENT = re.compile(rf"\bI(?:'ll|\s+will|'m\s+going\s+to|\s+am\s+going\s+to)\s+(?!(?:{MEETING_VERBS})\b)\w+", re.I)
# "Elena will hate me" says how someone will feel, not what they will do.
NAMED_COMMITMENT = re.compile(
    r"\b(?P<name>[A-Z][a-z]+)\s+(?:will|is\s+going\s+to|is\s+to)\s+(?!(?:be|hate|love|like|mind|know|understand|agree|want)\b)\w+"
)
ROLE_COMMITMENT = re.compile(
    r"\bthe\s+(?P<role>(?:[a-z]+\s+)?(?:manager|lead|team|owner|engineer|designer|department))\s+will\s+(?!be\b)\w+",
    re.I,
)
NOT_NAMES = {"It", "That", "This", "There", "We", "They", "He", "She", "You", "Which", "What", "Who", "Then", "So",
             "Everyone", "Nobody", "Someone", "Everything", "Nothing", "Where", "When", "How", "If"}  # fmt: skip
VOCATIVE_REQUEST = re.compile(r"^(?P<name>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?),\s+(?:please|can\s+you|could\s+you|would\s+you)\b")
# A request opens the sentence or a clause ("Please send ...", "Could you check ...", "..., so please keep the 20th");
# a "please" elsewhere is politeness or quoted, and "please note / wait / slow down" is the chair's procedure.
REQUEST = re.compile(
    r"(?:^(?:please|can\s+you|could\s+you|would\s+you)|[,;:]\s+(?:(?:so|and|but|then)\s+)?please)\s+"
    r"(?!(?:like|mind|note|wait|direct|slow|make\s+sure|be\s+(?:brief|aware|seated)|feel\s+free|go\s+ahead|continue|"
    r"proceed)\b)\w+",
    re.I,
)
# "Can you explain ...?" asks for an answer now, not for work after the meeting.
ASKS_TO_TALK = re.compile(
    r"^(?:\w+(?:\s+\w+)?,\s+)?(?:can|could|would)\s+you\s+(?:all\s+|guys\s+|both\s+|just\s+|briefly\s+|perhaps\s+)?"
    r"(?:explain|describe|tell|say|answer|set\s+out|clarify|outline|talk|expand|elaborate|comment|give\s+us|confirm|"
    r"update\s+us|share\s+with\s+us|remind|hear\s+(?:me|us)|see\s+(?:me|us|my|our)\b)\b",
    re.I,
)
ACTION_ITEM = re.compile(r"\baction\s+item(?:\s+for\s+(?P<name>[A-Z][a-z]+))?", re.I)
WE_NEED_TO = re.compile(r"(?<!\bdo\s)\bwe\s+need\s+to\s+\w+", re.I)  # not "do we need to ...?"
# "Elena, write me a one-pager by Friday": an order to someone named, with a deadline.
VOCATIVE_ORDER = re.compile(
    r"^(?P<name>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?),\s+(?!(?:what|how|why|when|where|who|which|do|does|did|is|are|was|were|you|"
    r"your|I|we|it|that|this|the|a|an|thanks|thank|yes|no|sorry|right|okay|so|and|but|good|great|any|anything|have|has|"
    r"would|could|can|will|just|over|welcome|go\s+ahead)\b)[a-z]+\b"
)
# A request addressed to someone in the room (not a commitment, not "we need to").
REQUEST_OF_SOMEONE = re.compile(r"^(?:\w+(?:\s+\w+)?,\s+)?(?:please|can\s+you|could\s+you|would\s+you)\b|\bplease\s+\w+", re.I)
ACCEPTS = re.compile(r"^(?:sure|will\s+do|okay|ok|yes|yep|I'll|I\s+will|on\s+it)\b", re.I)
RATIONALE = re.compile(r"\b(?:because|since)\b\s+(?P<why>.+)$", re.I)
DEADLINE_FIRST = re.compile(r"^(?:by|before|no\s+later\s+than|latest|due)\b", re.I)
MITIGATION = re.compile(r"^(?:we\s+can|we\s+could|to\s+mitigate|as\s+a\s+mitigation)\b", re.I)

RISK_CATEGORIES = {
    "schedule": ("delay", "slip", "late", "deadline", "launch date", "timeline", "miss", "longer"),
    "cost": ("budget", "cost", "price", "euro", "dollar", "expensive", "exchange rate", "overspend"),
    "security": ("security", "rate limiting", "breach", "password", "vulnerab"),
    "supplier": ("supplier", "vendor", "printer", "delivery"),
    "people": ("candidate", "hire", "hiring", "staff", "leave"),
    "technical": ("firmware", "bug", "battery", "overheat", "network", "wifi", "server", "database", "interrupt", "crash"),
}
OPPORTUNITY_TYPES = {
    "cost_saving": ("save", "cut", "cheaper", "reduce"),
    "hiring": ("hire", "candidate", "recruit"),
    "partnership": ("partner", "partnership", "distributor", "retailer"),
    "sales": ("sign", "customer", "upsell", "market", "sell", "buyer", "leads", "premium"),
    "product": ("demo", "feature", "version", "offer", "design"),
}


@dataclass(frozen=True)
class Match:
    kind: ItemKind
    fields: dict[str, Any]


def clean(text: str) -> str:
    """The sentence without leading fillers, first letter capitalized, whitespace normalized."""
    text = " ".join(FILLERS.sub("", text.strip()).split())
    return text[:1].upper() + text[1:] if text else text


def classify(
    sentence: str,
    speaker: str | None = None,
    meeting_date: date | None = None,
    *,
    concluding: bool = False,
    people: People | None = None,
) -> list[Match]:
    """The kinds of item one sentence states, with the fields the rules can fill. ``concluding``: the sentence
    follows a bare "Okay." / "Right." of its own turn; ``people``: the meeting's, to tell "Dana will ..." (a
    person) from "Staff will ..." (a sentence's first word)."""
    core = clean(sentence)
    question = core.endswith("?")
    found: list[Match] = []
    assignee, is_task = _task(core, speaker, people)
    if not question and _states_a_decision(core, sentence.strip(), concluding, is_task and assignee is not None):
        why = RATIONALE.search(core)
        found.append(Match("decision", {"status": "agreed", "rationale": why["why"].rstrip(".") if why else None}))
    if not question and _states_a_risk(core):
        found.append(Match("risk", {"category": keyword_class(core, RISK_CATEGORIES, "general")}))
    if not question and OPPORTUNITY.search(core):
        found.append(Match("opportunity", {"type": keyword_class(core, OPPORTUNITY_TYPES, "general")}))
    if is_task:
        found.append(Match("task", {"assignee": assignee, "due_date": due_date(core, meeting_date), "status": "open"}))
    return found


def _states_a_decision(core: str, raw: str, concluding: bool, is_task: bool) -> bool:
    if NOT_DECISION.search(core):
        return False
    if DECISION.search(core):
        return True
    if is_task or HEDGED.search(core):  # "Dan will open the account by August 31" is Dan's task
        return False
    if SET_AMOUNT.search(core):
        return True
    closing = concluding or CLOSING_MARKER.search(raw) is not None or CONCLUDES.search(core) is not None
    if (SCHEDULED.search(core) or (closing and ON_A_DATE.search(core))) and names_a_date(core):
        return True
    return closing and PLAN_STATEMENT.search(core) is not None


def _states_a_risk(core: str) -> bool:
    if conditional := CONDITIONAL_RISK.search(core):
        if HARM.search(conditional["then"]):
            return True
        counterfactual = COUNTERFACTUAL.search(conditional["if"])  # "if we hadn't done that, ..." looks back
        if NEGATIVE_CONDITION.search(conditional["if"]) and not (counterfactual or PLANNED_RESPONSE.search(conditional["then"])):
            return not PLANNED_RESPONSE.search(conditional["if"])
    if LATE.search(core):
        return True
    if not RISK.search(core) or NOT_RISK.search(core):
        return False
    return not (VAGUE_RISK.search(core) and len(core.split()) <= 8)


def classify_with_model(
    sentence: str,
    speaker: str | None,
    meeting_date: date | None,
    first_in_turn: bool,
    last_in_turn: bool,
    previous: str | None = None,
    following: str | None = None,
    *,
    concluding: bool = False,
    people: People | None = None,
) -> list[Match]:
    """The patterns' kinds plus those the sentence classifier (rag.backfill.classifier) finds above its
    precision thresholds, with the fields the patterns fill; a kind both find is one match. ``previous`` and
    ``following`` are the neighbouring sentences of the segment (the classifier reads an answer, an agreement)."""
    from rag.backfill.classifier import classify_sentence, kinds_of

    found = classify(sentence, speaker, meeting_date, concluding=concluding, people=people)
    have = {match.kind for match in found}
    core = clean(sentence)
    probabilities = classify_sentence(
        sentence, speaker, first_in_turn=first_in_turn, last_in_turn=last_in_turn, previous=previous, following=following
    )
    for kind in kinds_of(probabilities):
        if kind in have:
            continue
        if kind == "decision":
            why = RATIONALE.search(core)
            found.append(Match("decision", {"status": "agreed", "rationale": why["why"].rstrip(".") if why else None}))
        elif kind == "risk":
            found.append(Match("risk", {"category": keyword_class(core, RISK_CATEGORIES, "general")}))
        elif kind == "opportunity":
            found.append(Match("opportunity", {"type": keyword_class(core, OPPORTUNITY_TYPES, "general")}))
        elif kind == "task":
            assignee = _task(core, speaker, people)[0] if len(core.split()) >= 3 else None
            found.append(Match("task", {"assignee": assignee, "due_date": due_date(core, meeting_date), "status": "open"}))
    return found


def _task(core: str, speaker: str | None, people: People | None = None) -> tuple[str | None, bool]:
    if len(core.split()) < 3 or ASKS_TO_TALK.search(core):
        return None, False
    if SELF_COMMITMENT.search(core):
        return speaker, True
    if vocative := VOCATIVE_REQUEST.search(core):
        return vocative["name"], True
    if (order := VOCATIVE_ORDER.search(core)) and names_a_date(core):
        return order["name"], True
    question = core.endswith("?")  # "Or will that change?" asks; a request may ask
    if not question and (named := NAMED_COMMITMENT.search(core)) and _names_someone(named, people):
        return named["name"], True
    if not question and (role := ROLE_COMMITMENT.search(core)):
        return role["role"], True
    if action := ACTION_ITEM.search(core):
        return action["name"], True
    # "we need to do better" is a duty; "we need to send the forms by Friday" is work with a deadline
    if REQUEST.search(core) or (WE_NEED_TO.search(core) and names_a_date(core)):
        return None, True
    return None, False


def _names_someone(named: re.Match[str], people: People | None) -> bool:
    """Whether "<Word> will ..." names a person: any capitalized word inside a sentence, but its first word
    ("Staff will submit ...", "Nights will join ...") only when it is someone the meeting knows (notes, which have
    no speakers to know, give it the benefit of the doubt)."""
    if named["name"] in NOT_NAMES:
        return False
    return named.start() > 0 or people is None or not people.names or people.knows(named["name"])


def keyword_class(text: str, classes: dict[str, tuple[str, ...]], default: str) -> str:
    lowered = text.lower()
    for name, words in classes.items():
        if any(word in lowered for word in words):
            return name
    return default


def extract_by_rules(
    units: Sequence[Unit], segment_id: int | None, meeting_date: date | None, people: People | None = None
) -> list[KnowledgeItem]:
    """Items of one segment's sentences, in order; a task's assignee in the one form ``people`` knows
    (by default the segment's speakers)."""
    people = people or People.of(unit.speaker for unit in units)
    items: list[KnowledgeItem] = []
    answered: set[int] = set()  # sentences that took on a request: part of its task, not tasks of their own
    decided_at: tuple[int, int, int] | None = None  # the last decision's first and last sentence, index in ``items``
    for position, unit in enumerate(units):
        first_in_turn = unit.turn is None or position == 0 or units[position - 1].turn != unit.turn
        last_in_turn = unit.turn is None or position == len(units) - 1 or units[position + 1].turn != unit.turn
        previous = units[position - 1].text if position > 0 else None
        following = units[position + 1].text if position + 1 < len(units) else None
        concluding = not first_in_turn and previous is not None and BARE_MARKER.match(previous.strip()) is not None
        matches = classify_with_model(
            unit.text, unit.speaker, meeting_date, first_in_turn, last_in_turn, previous, following,
            concluding=concluding, people=people,
        )  # fmt: skip
        for match in matches:
            if match.kind == "task" and position in answered:
                continue
            fields = dict(match.fields)
            description = clean(unit.text)
            first = last = position
            if match.kind == "decision" and len(description.split()) <= 2 and position > 0:  # a bare "Agreed."
                first = position - 1
                description = clean(units[first].text)
            if match.kind == "task":
                assignee = people.canonical(fields["assignee"])
                answer = _answer(units, position, assignee, people) if REQUEST_OF_SOMEONE.search(description) else []
                if answer:
                    # "Dana, can you ...?" / "Yes, I'll have it by Friday.": one task; the date the answer
                    # commits to, else the one asked for.
                    answered.update(answer)
                    last = answer[-1]
                    assignee = people.canonical(units[last].speaker)
                    fields["due_date"] = next(
                        (d for p in answer if (d := due_date(clean(units[p].text), meeting_date))), fields["due_date"]
                    )
                if fields["due_date"] is None and not last_in_turn and position + 1 < len(units):
                    # "I'll build the templates as soon as it's up. By February 10th, if ...": the deadline follows.
                    fields["due_date"] = _deadline_after(clean(units[position + 1].text), meeting_date)
                fields["assignee"] = assignee
            if match.kind == "risk":
                fields["mitigation"] = _mitigation(units, position)
            if match.kind == "decision" and decided_at is not None and _follows_in_turn(units, decided_at[1], position):
                # "Then let's go to a hundred and fifty. Tickets are $150 this year.": one decision, said twice;
                # the later sentence, usually the precise one, describes it.
                first = min(first, decided_at[0])
                del items[decided_at[2]]
            if match.kind == "decision":
                decided_at = (first, last, len(items))
            span = units[first : last + 1]
            items.append(
                KnowledgeItem(
                    kind=match.kind,
                    description=clip(description, 500),
                    evidence=" ".join(u.text for u in span),
                    start_char=span[0].start_char,
                    end_char=span[-1].end_char,
                    method="rules",
                    segment_id=segment_id,
                    start_turn=span[0].turn,
                    end_turn=span[-1].turn,
                    speakers=tuple(dict.fromkeys(u.speaker for u in span if u.speaker)),
                    fields=fields,
                )
            )
    return items


def _follows_in_turn(units: Sequence[Unit], previous: int, position: int) -> bool:
    """Whether sentence ``position`` is the one after ``previous``, in the same turn."""
    return position == previous + 1 and units[position].turn is not None and units[position].turn == units[previous].turn


def _answer(units: Sequence[Unit], position: int, addressee: str | None, people: People) -> list[int]:
    """The sentences of the next turn that take a request on ("Sure.", "Yes. I'll have it by Friday."):
    another speaker's, the addressee's when the request names one; empty when no one says yes."""
    here = units[position]
    for start in range(position + 1, min(position + 4, len(units))):
        unit = units[start]
        if unit.turn == here.turn:
            continue
        if not unit.speaker or unit.speaker == here.speaker:
            return []
        if addressee is not None and people.canonical(unit.speaker) != addressee:
            return []
        turn = [p for p in range(start, min(start + 2, len(units))) if units[p].turn == unit.turn]
        for end in turn:
            if SELF_COMMITMENT.search(clean(units[end].text)):
                return list(range(start, end + 1))
        return [start] if ACCEPTS.search(unit.text.strip()) else []
    return []


def _deadline_after(text: str, meeting_date: date | None) -> date | None:
    """The date of a sentence that only adds a deadline ("By next Tuesday, so Sam can look at them.")."""
    return due_date(text, meeting_date) if DEADLINE_FIRST.match(text) else None


def _mitigation(units: Sequence[Unit], position: int) -> str | None:
    for unit in units[position + 1 : position + 4]:
        if MITIGATION.search(clean(unit.text)):
            return clip(clean(unit.text), 500)
    return None
