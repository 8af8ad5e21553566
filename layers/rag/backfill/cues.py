"""The cue patterns of the offline extractor (rag.backfill.rules): what in a sentence makes it a decision, a risk,
an opportunity or a task, and what only sounds like one (who a task is asked of or taken by: rag.backfill.task_cues). The rules' docstring says what each kind takes; the
comments here say why a pattern is shaped as it is.
"""

from __future__ import annotations

import re

FILLERS = re.compile(
    r"^(?:(?:okay|ok|so|right|good|well|yeah|yes|sure|then|and|alright|great|fine|uh|um|er|ah|hmm|mm)\b[,.!:]?\s*)+", re.I
)


def any_of(*patterns: str) -> re.Pattern[str]:
    """One case-insensitive pattern matching any of ``patterns``."""
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
# "So unless anyone objects, we go back to Brook.", "If everyone's happy, we're going with the tiered prices."
UNLESS_OBJECTIONS = r"(?:unless|if)\s+(?:anyone|anybody|nobody|no\s+one|everyone|everybody)(?:'s|\s)[^,]{1,30}"
DECISION = any_of(
    r"\bwe(?:'ve| have)?\s+(?:decided|agreed)\b",
    r"\b(?:let's|let us|we'll|we will|we're going to|we are going to)\s+go\s+(?:with|for)\b",
    r"\bwe(?:'re| are)\s+going\s+with\b",
    r"\b(?:the\s+)?(?:final\s+)?decision\s+is\b",
    r"\bsettled\s+on\b",
    rf"(?:^|[,;:]\s+|\bthen\s+)let's\s+(?:just\s+|all\s+)?(?:{LETS_SETTLE})\b",
    # "Let's say the timetable consultation runs for six weeks." (not "let's say we had ...")
    r"^let's\s+say\s+(?:the|our)\s+[^,]{3,80}?(?:\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|"
    r"fifteen|twenty|thirty|forty|fifty|hundred|thousand)\b)",
    rf"^(?:(?:then|so|and|but|yeah|ok(?:ay)?|right|fine),?\s+)*we(?:'ll|\s+will)\s+(?:(?:just|all|simply|now)\s+)?(?:{SETTLED_VERBS_FUTURE})\b",
    r"^agreed\b",
    # A plan stated as settled, in the present: "We move the launch to May 19", "we're launching on May 5",
    # "we stay on the C3", "we go back to the old cap" (a verb of choosing or changing a plan, not "we go to lunch").
    rf"^(?:(?:then|so|and|but|yeah|ok(?:ay)?|right|fine|for\s+now|with\s+[^,]{{1,60}}|{UNLESS_OBJECTIONS}),?\s+)*we\s+(?:(?:now|just|all|simply)\s+)?(?:{SETTLED_VERBS})\b",
    rf"^(?:(?:then|so|and|but|yeah|ok(?:ay)?|right|fine|with\s+[^,]{{1,60}}|{UNLESS_OBJECTIONS}),?\s+)*we're\s+(?:{SETTLED_VERBS_ING})\b",
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
# An agreement that adds a few words at most ("Agreed.", "Agreed, very happy with that."): what it agrees with is the
# sentence before, past a tag question ("..., not from Carrick's files. Agreed?").
AGREES = re.compile(r"^agreed\b[,.!]?(?:\s+[\w']+){0,4}[.!]?$", re.I)
TAG_QUESTION = re.compile(r"^\W*[\w']+\W*\?$")
BARE_MARKER = re.compile(r"^(?:okay|ok|right|fine|fair|good|alright|all\s+right|agreed|done|decided)[.!]?$", re.I)
# The chair running the meeting, not concluding a discussion: "This is the kickoff for ...", "Next, the temporary
# kitchen unit.", "Let's get going, it's a full agenda.", "Same time in three weeks.", "I have to run."
RUNNING_THE_MEETING = any_of(
    r"^(?:this\s+is|first|next|now|last|news|thanks|thank|happy|welcome|same\s+time|lots?|a\s+lot|quick|"
    r"(?:the\s+)?big\s+one|three\s+weeks|that's\s+one)\b",
    r"\blet(?:'s|\s+me|\s+us)\s+(?:get\s+going|start|begin|go\s+through|do\s+a|come\s+back|wrap|move\s+on|take\s+a|"
    r"give\s+you)\b",
    r"\b(?:meeting|kick-?off|agenda|floor)\b|\boff\s+(?:my|the)\s+list\b|\bto\s+get\s+through\b",
    r"\b(?:I|I'm|I've|me|my|you|your)\b|\b(?:need|needs|has|have)\s+to\b|\bwe\s+(?:need|owe)\b",
)
# What a discussion came to names what was settled: an amount, a name, or what "we" do.
SETTLES_SOMETHING = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|hundred|"
    r"thousand|million)\b|\bwe\s+(?!need|owe|have|had|were|was|can|could|should|might|may)\w+|(?<=\w)\W+[A-Z][a-z]+",
)
CONCLUDES = re.compile(r",\s+then[.!]?$", re.I)
# A choice named and closed: "So the 20th of April it is.", "So that's settled: three-year term, annual in advance."; not
# "It sounds worse than it is.", "Let's make sure it is.", "a forward contract or whatever it is."
NAMED_CHOICE = any_of(
    r"^(?:(?:so|okay|ok|right|then|fine|good),?\s+)*"
    r"(?!.*\b(?:how|what|where|who|which|whatever|know|see|sure|than|as|if|there)\b)[\w' -]{2,40}\s+it\s+is"
    r"(?:[.!]?$|,\s+(?:starting|from|on|with|for)\b)",  # "Hendry it is, starting the fourth of January."
    r"\b(?:that's|that\s+is|it's)\s+(?:all\s+)?settled\b",
)
# A sentence accepting what was just proposed ("Good, then that's how we do it.", "Then let's do it.", "It costs us
# a week, but fine."): what its speaker says next in the turn is the settled version.
ACCEPTED = re.compile(
    r"\b(?:let's\s+(?:do|commit\s+to)\s+(?:it|that|this)|that's\s+how\s+we\s+do\s+it|but\s+fine|I'm\s+persuaded|it\s+is,?\s+then)\b",
    re.I,
)
# What the meeting's leader settles without saying "decide": a conclusion drawn ("Then from today, ...", "Then
# Daniel's back on the runs") or a change stated ("... on the 12th of June instead", "from now on", "Albert
# Street it is, then", "a week earlier than we said").
LEADER_CONCLUSION = any_of(
    r"^(?:(?:good|okay|ok|right|fine|so),?\s+)?then\b,?\s+(?!I\b|you\b|we\s+need|let's\s+(?:see|talk|look|move|come))",
    r"\binstead[.!]?$|\binstead,",
    r"\bfrom\s+(?:now\s+on|today|tomorrow)\b",
    r"\b(?:a|one|two|three|four)\s+(?:day|week|month)s?\s+(?:earlier|later)\b",
    r"\bit\s+is,?\s+then\b",
    r",\s+then[.!]?$",  # what the discussion came to: "Two hundred and forty stewards a day, then."
)
PLAN_STATEMENT = re.compile(_SUBJECT + r"(?:will|'ll|(?:is|are)\s+(?:in|on)|goes|moves?|stays?|comes?|joins?)\b", re.I)
HEDGED = re.compile(
    r"\b(?:I\s+think|I\s+guess|I\s+suppose|I'd|maybe|perhaps|probably|possibly|might|could|would|should|not\s+sure|"
    r"if|unless|whether|was|were|used\s+to|last\s+year|so\s+far|currently|at\s+the\s+moment|typically|usually|hopefully|"
    r"ready|done|finished|available|late|expect\w*|predict\w*|can|says?|said|told|thinks?|reckons?|cannot|never)\b"
    r"|n't\b|(?<!,\s)\bnot\b",
    re.I,
)
# Pleasantries: "Merry Christmas, everyone", "Luck Thursday, everyone", "Sam, please sleep this week", "I'll bring cake".
SMALL_TALK = re.compile(
    r"\b(?:merry\s+christmas|happy\s+(?:new\s+year|holidays|birthday|easter)|(?:good\s+)?luck\s+(?:\w+day|tomorrow|tonight|everyone)|"
    r"have\s+a\s+(?:good|great|nice|lovely)\s+\w+|please\s+(?:sleep|rest|relax)|bring\s+(?:some\s+)?(?:cake|biscuits|snacks|"
    r"doughnuts|donuts|pizza|bacon|sweets))\b",
    re.I,
)
NOT_DECISION = any_of(
    SMALL_TALK.pattern,
    r"\b(?:haven't|have\s+not|not\s+yet|didn't|did\s+not)\s+(?:\w+\s+)?(?:decided|agreed)\b",
    # what was decided before, recalled to question it or to date something: "I know we decided it, but ...", "Two
    # things since we decided to buy."
    r"\b(?:know|since|after|when|day)\s+we(?:'ve|\s+have)?\s+(?:decided|agreed)\b",
    # a preference is not a decision: "I'd rather we didn't end up in a dispute", "I'd really rather not"
    r"\bI'?d\s+(?:(?:really|much|honestly)\s+)?rather\b",
    # the call itself: "Fiona's camera is frozen"
    r"\b(?:camera|screen|video|picture|audio|mic|microphone)(?:'s|\s+is|\s+are)\s+(?:\w+\s+)?(?:frozen|stuck|off)\b",
    r"\blet's\s+not\b",
    # an explanation, what is known, what nobody does, the next time: "Because his contract came back signed on the
    # 26th.", "We know how bad it is.", "Nobody's pushing seat deals any more.", "We'll put it first next time."
    r"^because\b|^we\s+(?:all\s+)?know\b|^(?:nobody|no\s+one)(?:'s|\s+is|\s+has|\s+wants)\b|\bnext\s+time\b",
    # a decision someone else took, reported: "The publisher agreed £600.", "Coldline confirmed the slot the next
    # morning", "The publisher of the Proclaimers track agreed £600 for festival use" (not the minutes' "Helen agreed:
    # we ...")
    r"^(?:(?:the|our|their|his|her)\s+(?:[\w'-]+\s+){0,5}?|(?-i:(?!(?:We|I|You|Everyone|Everybody|All|That|This|It|There|"
    r"Which|What|Who|Nothing|Everything|Both|Either|Neither|Then|So|Now|Finally)\b)[A-Z][\w-]+(?:\s+[A-Z][\w-]+){0,2})\s+)"
    r"(?:(?:has|have|had|already|finally|formally|just)\s+)*(?:agreed|approved|confirmed|signed(?:\s+off)?|decided|"
    r"accepted|voted|granted|ratified)\b(?!\s*[:;])",
    # work called off, which a later meeting's change names: "Honestly, let's drop it.", "That one's off the list."
    r"\b(?:drop(?:ping)?|cancel(?:led|ling)?|forget(?:\s+about)?)\s+(?:it|that|this)\b|\boff\s+(?:the|my|our)\s+list\b|"
    r"\bcan\s+be\s+dropped\b|\bno\s+point\s+\w+ing\b",
    # what "let's" does to what was just said names nothing decided: "Let's do it.", "Let's get it in early."
    r"^(?:\w+,\s+)?let's\s+\w+\s+(?:it|them|that|this)(?:\s+one)?(?:\s+\w+){0,2}[.!]?$",
    # watching is not deciding: "let's keep an eye on that one", "let's keep it in mind"
    r"\bkeep(?:ing)?\s+(?:an\s+eye|track|(?:it|that|this)\s+in\s+mind|\w+ing\b)",
    # ... nor is keeping something open: "let's keep that one open", "we'll keep it on the risk list"
    r"\bkeep(?:ing)?\s+(?:it|that|this|them|both|the\s+\w+)(?:\s+one)?\s+(?:(?:very\s+much|still)\s+)?(?:open|on\s+(?:the|our)\s+(?:\w+\s+)?(?:list|radar|agenda))\b",
    # running the meeting: "we move on", "we pick this up next week", "we stick to the agenda"
    r"\bwe(?:'re|'ll|\s+will)?\s+(?:(?:now|just)\s+)?(?:mov(?:e|ing)\s+on|pick(?:ing)?\s+(?:this|that|it)\s+up|stick(?:ing)?\s+to\s+the\s+agenda|"
    r"open(?:ing)?\s+(?:the|this)\s+(?:meeting|call|session)|clos(?:e|ing)\s+(?:the|this)\s+(?:meeting|call|session))\b",
    # ... the order of the agenda or the call itself: "let's take the dates first", "let's keep this short", "let's be
    # quick", "let's run the list from last time", "see you in two weeks"
    r"\blet's\s+(?:(?:take|do|start\s+with|begin\s+with|look\s+at)\s+(?:the\s+)?[\w'-]+(?:\s+[\w'-]+)?\s+first|"
    r"keep\s+(?:this|it)\s+(?:short|brief|quick)|be\s+(?:quick|brief)|"
    r"(?:run|go|walk)\s+(?:through\s+)?(?:the|our)\s+(?:\w+\s+)?(?:list|actions|action\s+items|agenda))\b",
    r"\bsee\s+you\s+(?:all\s+)?(?:in|on|next|at|then|tomorrow)\b",
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
RISK = any_of(
    r"\brisks?\b", r"\bconcern(?:ed|s)?\b", r"\bworr(?:ied|y)\b", r"\bdanger\b", r"\bbottleneck\b", r"\bblocker\b",
    # "the vendor might not support it", "it may not be ready"; not a hedge ("that might not be right", "Jane may not be")
    r"\b(?:might|may)\s+not\s+(?:be\s+(?:able|ready|enough|available|delivered|finished|done|in\s+time|on\s+time)|"
    r"(?!be\b)\w+)",
    r"\bcould\s+(?:delay|slip|fail|break|push)\b",
    # "so the covers may be late", "the new name could still hit the same problem", "they might pull out"
    r"\b(?:may|might|could)\s+(?:well\s+|still\s+|easily\s+)?(?:be\s+(?:late|delayed)|slip|run\s+(?:late|out)|"
    r"hit\s+(?:a|the)\s+(?:same\s+)?(?:problem|snag|wall)|fall\s+through|walk\s+away|pull\s+out)\b",
    r"\bwaiting\s+to\s+happen\b",  # "a defamation claim waiting to happen"
    r"\b(?:problem|issue)\s+is\s+that\b", r"\bif\b.{0,80}\b(?:slips|fails|misses|breaks)\b",
)  # fmt: skip
# "If the strike goes ahead, the units are two weeks late": a condition, then a harm (generic "if you ..." is advice).
# A short lead-in may come first: "At two hundred and eighty, if we sell out, we can't hit the goal", or a clause
# joined by "and" / "but": "The supplier needs an update for zones, and if it isn't ready by spring, drivers are ...".
CONDITIONAL_RISK = re.compile(
    r"^(?:(?:\w+,?\s+){0,2}?|[\w'$ -]{3,50},\s+|.{3,200}?[,;]\s+(?:and|but)\s+)(?:if|unless)\s+(?!you\b)"
    r"(?P<if>[^,]{3,160}),\s*(?P<then>.+)$",
    re.I,
)
# ... said without the comma, the consequence opening with who suffers it: "If he withdraws his consent we lose the
# spine of act three" (only its harm makes it a risk)
BARE_CONDITIONAL_RISK = re.compile(
    r"^(?:\w+,?\s+){0,2}?(?:if|unless)\s+(?!you\b)(?P<if>[^,]{3,120}?)\s+(?P<then>(?:we|they|it|he|she)\b.+)$", re.I
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
    r"suffer\w*|danger\w*|worse|disaster|no\s+(?:way|longer|fallback)|takedowns?|walk\s+away|pull\s+out|"
    # "we've got a fire", "he'll walk", "we finish the tour in deficit", "another two and a half thousand"
    r"fire|shock|deficit|jam|jams|jammed|(?:don't|doesn't|won't)\s+get|(?:he|she|they)'ll\s+walk|"
    r"another\s+[\w\s-]{0,30}(?:thousand|hundred|million|pounds|dollars))\b"
    # "If ours is one of those, no electric buses for the launch": something lost
    r"|^no\s+(?!problem|worries|need|rush|objections?|change|issues?|questions?|doubt)\w+",
    re.I,
)
# "That's a risk too", "Everything is a risk this year": an alarm that does not say what could go wrong.
VAGUE_RISK = re.compile(r"^(?:that|this|it|everything|which|there)(?:'s|\s+is|\s+are|\s+was)\b", re.I)
NOT_RISK = any_of(
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
    # talk about a risk said before, not one of its own: "Noted, that's a risk.", "Here's my worry.", "That risk stays
    # open.", "It lowers the risk.", "it goes on the risk list"
    r"^(?:(?:noted|okay|ok|right|yes|yeah|so|and|but|well),?\s+)*(?:that's|that\s+is|this\s+is|it's|here's|there's)\s+"
    r"(?:still\s+)?(?:a|the|my|our|another|one)\s+(?:real\s+|big\s+|other\s+)?(?:risk|worry|concern)(?:\s+\w+){0,3}?"
    r"(?:,\s+then)?(?:[.!]?$|,\s+(?:keep|let's|so)\b)",
    r"\b(?:let's|we'll|I'll)\s+note\s+(?:\w+'s\s+|the\s+|that\s+)?(?:risk|worry|concern)\b",
    r"^(?:that|this|the\s+\w+)\s+(?:risk|worry|concern)\s+(?:stays|remains|is\s+still)\s+open\b",
    r"\b(?:lowers|reduces|cuts)\s+(?:the|that)\s+risk\b",
    r"\b(?:on|off)\s+(?:the|our)\s+risk\s+(?:list|register|log)\b",
)
OPPORTUNITY = any_of(
    r"\bopportunit(?:y|ies)\b", r"\bwe\s+could\s+also\b", r"\bpotential\s+to\b", r"\bthere(?:'s|\s+is)\s+potential\b",
    r"\bcould\s+save\b", r"\bupsell\b", r"\bnew\s+market\b", r"\bcould\s+(?:expand|grow|win|sell)\b",
    # a gain named further on: "we could replace the lights with LEDs and save $200k a year"
    r"\bwe\s+could\s+(?:[\w'-]+\s+){1,10}?(?:and\s+)?(?:save|sell|charge\s+(?:more|extra|for)|earn|make\s+money)\b",
)  # fmt: skip
ACCEPTS = re.compile(
    r"^(?:sure|will\s+do|okay|ok|yes|yep|I'll|I\s+will|on\s+it|can\s+do|no\s+problem|happy\s+to|of\s+course|absolutely|"
    r"leave\s+it\s+with\s+me|I\s+can(?:\s+do\s+(?:that|it))?\s*[.!,])",
    re.I,
)
RATIONALE = re.compile(r"\b(?:because|since)\b\s+(?P<why>.+)$", re.I)
# "In two weeks, so it's in before the build.", "Wednesday next week at the latest.": a deadline said first.
DEADLINE_FIRST = re.compile(
    r"^(?:by|before|no\s+later\s+than|latest|due|within|in\s+(?:a|one|two|three|four|\d+)\s+(?:days?|weeks?))\b"
    r"|\bat\s+the\s+latest\b",
    re.I,
)
# A sentence saying when the work just promised or asked for will be ready ("I'll have numbers by Friday.", "Give me
# two weeks.", "It should leave their office by Wednesday.", "They need it by August 3rd.", "..., by the 24th?").
DELIVERY = any_of(
    r"^(?:(?:and|so|then|but)\s+)?(?:(?:I|we|you)(?:'ll|\s+will|\s+can|\s+could|\s+should)|it(?:'ll|\s+will|\s+should)|"
    r"that(?:'ll|\s+will|\s+should)|should)\s+(?:have|get|be|leave|arrive|land)\b",
    r"^(?:(?:and|so|then|but)\s+)?give\s+(?:me|us|him|her|them)\b",
    r"\b(?:need|needs|want|wants)\s+(?:it|that|them|this)\s+(?:by|before)\b",
    r",\s+(?:by|before)\s+",
)
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
