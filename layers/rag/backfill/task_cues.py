"""The cue patterns of who does a task (rag.backfill.rules): the speaker's own commitment, a request of someone
named, and the talk that only sounds like one (running the meeting, asking for an answer now, pleasantries aside:
rag.backfill.cues). The comments say why a pattern is shaped as it is.
"""

from __future__ import annotations

import re

# Verbs of running the conversation itself ("I'll start", "I'll pick up on that"), never tasks; "I'll have a
# prototype ready" and "I'll bring two samples" are ("I'll have to say", "I'll bring up" are not).
MEETING_VERBS = (
    r"be|say|admit|bet|guess|think|believe|only\s+believe|have\s+to|go\s+with|leave|see|tell\s+you\s+what|start|begin|pick|come|bring\s+(?:up|in)"
    r"|ask\s+(?:you|everyone|all|a\s+question)|try\s+to\s+(?:answer|explain|be|keep|summari[sz]e|clarify|remember)"
    r"|pursue|move|hand|turn|stop|explain|answer|repeat|continue|make\s+an\s+example|keep\s+it|go\s+(?:on|back|through)"
    r"|remind|presume|assume|mention|note|summari[sz]e|introduce|wrap\s+up|show\s+(?:you|that|this)"
    r"|read\s+(?:out|it|that|this)|try\s+and\s+(?:be|answer|explain|keep)|generally|just\s+(?:say|add|mention|note)"
    r"|need(?!\s+to\b)|want(?!\s+to\b)|lose|not"  # "I'll need a design pack from them" is a need, "I'll lose people" a consequence
)
_I_WILL = r"\bI(?:'ll|\s+will|'m\s+going\s+to|\s+am\s+going\s+to)\s+"
SELF_COMMITMENT = re.compile(rf"{_I_WILL}(?!(?:{MEETING_VERBS})\b)\w+", re.I)
# The speaker's own future that is no work: "I'll see you all on Tuesday", "I'll need a design pack from them", "I'll
# want that in writing", "I'll be out for two weeks".
NOT_WORK = re.compile(
    rf"{_I_WILL}(?:be\s+(?:out|away|off|honest|brief|quick)|see\s+you|need(?!\s+to)|want|stop|say|admit|bet|guess|"
    r"think|believe|spare|stand(?!\s+up\b)|sit(?!\s+down\b)|warn\s+you\s+now|live\s+with|regret|take\s+(?:that|it)\s+back)\b",
    re.I,
)
# The speaker's own future, whatever the verb ("I'll go through their accounts ..."): the owner of what the classifier
# reads as a task, though the patterns leave "I'll go through / start ..." to meeting talk.
FIRST_PERSON_FUTURE = re.compile(rf"{_I_WILL}\w+", re.I)
# Work the speaker offers to do: "I can have it by December 11", "let me ask our data team".
OFFER = re.compile(
    r"^(?:(?:and|so|okay|ok|sure|yes|yeah|right),?\s+)*(?:I\s+(?:can|could)|let\s+me)\s+(?!(?:see|think|say|check\s+my|be)\b)\w+",
    re.I,
)
# "Elena will hate me" says how someone will feel, not what they will do.
NAMED_COMMITMENT = re.compile(
    r"\b(?P<name>[A-Z][a-z]+)\s+(?:will|is\s+going\s+to|is\s+to)\s+(?!(?:be|hate|love|like|mind|know|understand|agree|want|not|never)\b)\w+"
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
    r"proceed|don't\s+(?:let|worry|panic))\b)\w+",
    re.I,
)
# Giving someone the floor: "Owen, can you take us through the layout first?"
_THE_FLOOR = r"(?:take|walk|run|talk)\s+us\s+through|start\s+(?:us\s+off|with)|kick\s+(?:us\s+)?off|go\s+first"
GIVES_THE_FLOOR = re.compile(rf"^(?:\w+(?:\s+\w+)?,\s+)?(?:can|could|would)\s+you\s+(?:all\s+|just\s+)?(?:{_THE_FLOOR})\b", re.I)
# "Can you explain ...?" asks for an answer now, not for work after the meeting.
ASKS_TO_TALK = re.compile(
    r"^(?:\w+(?:\s+\w+)?,\s+)?(?:can|could|would)\s+you\s+(?:all\s+|guys\s+|both\s+|just\s+|briefly\s+|perhaps\s+)?"
    r"(?:explain|describe|tell|say|answer|set\s+out|clarify|outline|talk|expand|elaborate|comment|give\s+us|confirm|"
    rf"{_THE_FLOOR}|"
    r"update\s+us|share\s+with\s+us|remind|live\s+with|hear\s+(?:me|us)|see\s+(?:me|us|my|our|the\s+(?:screen|slides?|deck))\b)\b",
    re.I,
)
WH_QUESTION = re.compile(r"^(?:what|how|why|when|where|who|which|anything)\b.*\?$", re.I)
ACTION_ITEM = re.compile(r"\baction\s+item(?:\s+for\s+(?P<name>[A-Z][a-z]+))?", re.I)
WE_NEED_TO = re.compile(r"(?<!\bdo\s)\bwe\s+need\s+to\s+\w+", re.I)  # not "do we need to ...?"
# "Elena, write me a one-pager by Friday": an order to someone named, with a deadline.
VOCATIVE_ORDER = re.compile(
    r"^(?P<name>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?),\s+(?!(?:what|how|why|when|where|who|which|do|does|did|is|are|was|were|you|"
    r"your|I|we|it|that|this|the|a|an|thanks|thank|yes|no|sorry|right|okay|so|and|but|good|great|any|anything|have|has|"
    r"would|could|can|will|just|over|welcome|go\s+ahead|happy|merry|congrat\w*|hi|hello|morning|hey|well)\b)[a-z]+\b"
)
# A request addressed to someone in the room (not a commitment, not "we need to").
REQUEST_OF_SOMEONE = re.compile(r"^(?:\w+(?:\s+\w+)?,\s+)?(?:please|can\s+you|could\s+you|would\s+you)\b|\bplease\s+\w+", re.I)
