"""Statements that change an earlier item, found offline: done, cancelled, handed over, moved, closed.

One sentence at a time, by what it says happened, not by what it is about: which task or risk
it changes is decided later, across the project's meetings, by the words it shares with the
open items (``rag.timeline``). So the cues can be plain and a little broad; a statement that
matches no earlier item changes nothing.

- done: a completion said in the past or present ("I sent it Friday", "the BOM went out last Thursday", "the lab slot
  is booked", "the runbook is finished", "the draft went round on the 14th", "I sent the spec on the 14th, did
  everyone get it?"), never a plan ("I'll send", "we need to book", "if it comes back", "until the test is done"), a
  part ("two of the three are in"), a question or a negation ("not done yet", "before I'd even sent it") said before
  it, nor someone booked up ("their teams are booked solid through November");
- cancelled: "cancel", "call off", "scrap", "no longer need", "not needed any more", "stop work on", "let's drop
  it", "I never placed the order", "you can forget the quote", "no point printing it now", "tell them to stop";
- reassigned: "<Name>, could you take over ...", "<Name> will take it over", "hand it over to
  <Name>", "<Name> owns that now"; the new owner in the project's one form for that person;
- rescheduled: "push / move / slip ... to <date>", "now due <date>", "Can I have until the 14th?", "by the 13th,
  not the 30th": the new date resolved against the meeting's; a new date promised for one's own work ("I'll have it
  to Northfield by the 25th") is ``promised``, which moves only a task its speaker owes (``rag.timeline``);
- closed (risks): "the certification risk is gone", "I'd call that risk closed", "no longer a
  concern", "we can close that one".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from rag.backfill.calendar_days import safe_date
from rag.backfill.closures import CLOSED
from rag.backfill.cues import any_of
from rag.backfill.due_dates import due_date
from rag.backfill.models import KnowledgeChange
from rag.backfill.text import clean, clip
from rag.backfill.units import Unit
from rag.people import People

CONTEXT_UNITS = 2  # sentences before a statement that say what it is about
CONTEXT_CHARS = 400


def _name(tag: int) -> str:
    """A person's name (one or two capitalized words) as group ``name<tag>``: each alternative needs its own."""
    return rf"(?P<name{tag}>[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)"


PLAN = any_of(
    r"\b(?:will|'ll|shall|going\s+to|gonna|need\s+to|needs\s+to|have\s+to|has\s+to|should|must|plan\s+to|want\s+to)\b",
    r"\b(?:can|could|would)\s+(?:you|we|someone)\b",
    r"^(?:let's|please)\b",
    r"\bif\b",
    # "once the road and the yard are done", "until the test is done": not yet ("seven till ten hours" is a time)
    r"\bonce\b|\b(?:until|till)\b(?!\s+(?:\d|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|noon|midnight)\b)",
    r"\b(?:one|two|three|four|five|\d+)\s+of\s+the\s+(?:\w+\s+)?(?:two|three|four|five|six|\d+)\b",  # "two of the three are in"
    r"\b(?:agreed|decided)\s+to\b",  # "the group agreed to run a campaign, with a bonus paid by the county": a decision
)
# When a past-tense report happened: "on the 19th", "on 28 May", "on Thursday", "Thursday", "yesterday", "last week".
_SPELLED_DAY = (
    r"(?:(?:twenty|thirty)-?\s*)?(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    r"thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth)|twentieth|thirtieth"
)
PAST_TIME = (
    rf"\b(?:on\s+the\s+(?:{_SPELLED_DAY})\b|(?:on\s+)?the\s+(?:morning|afternoon|evening)\s+of\b|the\s+same\s+(?:day|morning|afternoon|evening)\b|"
    r"first\s+thing\b|on\s+(?:the\s+)?\d|on\s+\w+\s+\d|yesterday|last\s+(?:week|night|month|\w+day)|this\s+morning|the\s+(?:next\s+)?day\s+after|the\s+next\s+day|"
    r"(?:on\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|in\s+(?:january|february|march|april|may|"
    r"june|july|august|september|october|november|december)|already)"
)
# Past tenses that report talk, thought or a change of plan, not work done.
NOT_COMPLETIONS = (
    r"(?:hundred|need|indeed|speed|decided|agreed|discussed|talked|mentioned|said|asked|wondered|noticed|considered|heard(?!\s+back)|learned|worried|wanted|"
    r"needed|tried|planned|expected|hoped|looked|thought|started\s+to|changed|moved|pushed|slipped|delayed|postponed|"
    r"rescheduled|used|liked|seemed|happened|called|raised|flagged|suggested|proposed|promised|offered|assumed|"
    r"explained|checked\s+whether|warned|complained|missed|failed|forgot|lost)"
)
NEGATED = any_of(
    r"\b(?:not|never)\b", r"n't\b", r"\bbefore\s+(?:I|we|you|he|she|they)(?:'d|\s+had)?\s+even\b"
)  # "before I'd even sent it"
DONE = any_of(
    r"\b(?:is|are|was|were|'s|got|been|all)\s+(?:now\s+)?(?:done|finished|complete|completed|sorted|wrapped\s+up)\b",
    # A bare past participle reports a completion ("Retail confirmed", "credit agreement signed"), unless a
    # determiner makes it an adjective ("load the approved leave", "a signed copy").
    r"(?<!\bthe )(?<!\ba )(?<!\ban )(?<!\bour )(?<!\bany )(?<!\bthis )(?<!\btheir )"
    r"\b(?:sent|shipped|submitted|published|booked|signed|filed|posted|uploaded|delivered|merged|deployed|released|"
    r"approved|reviewed|confirmed|finished|completed|paid|ordered|received|installed|rebuilt|fixed)\b",
    r"\bwent\s+(?:fine|well|smoothly|through|live|ok(?:ay)?|round|around)\b",  # "the draft went round on the 14th"
    r"\b(?:I|we|they|he|she)\s+(?:just\s+|already\s+|finally\s+)?(?:finished|completed|sent|shipped|submitted|published|"
    r"booked|signed|filed|posted|uploaded|delivered|merged|deployed|released|wrapped\s+up|got\s+(?:it|them|the)\b)",
    r"\bwent\s+(?:out|in)\b(?!\s+to\b)",  # not "it goes out to tender": what will happen; "it went in at the preview"
    r"\b(?:turned|showed)\s+up\b",  # "the contract turned up in the archive": found
    r"\b(?:I|we|he|she|they)\s+(?:finally\s+)?(?:found|tracked\s+down)\s+(?:the|it|them|their|our|his|her|an?)\b",
    r"\b(?:I|we)\s+got\s+(?:[A-Z][\w-]+|them|him|her)\s+to\s+\w+",  # "I got Halden to give a firm date"
    r"\braised\s+(?:the|a|an)\s+(?:purchase\s+order|PO|invoice|ticket)\b",
    # "my model's up on the shared drive", "the write-up's in the shared folder", "the cost code's live"
    r"(?:'s|'re|\bis|\bare)\s+(?:now\s+)?(?:up\s+on|in|on)\s+(?:the\s+)?(?:shared\s+)?(?:drive|folder|portal|wiki|site)\b",
    r"'s\s+(?:now\s+)?live\b",
    r"\bcame\s+(?:back|in|through)\b",
    r"\b(?:is|are|was|were|has\s+been|have\s+been|'s\s+been)\s+(?:now\s+)?(?:sent|shipped|submitted|published|booked|signed|filed|"
    r"posted|uploaded|delivered|merged|deployed|released|approved|reviewed|received|confirmed|switched|up|live|out|ready|"
    r"in\s+place|installed|rebuilt|fixed)\b",
    r"^(?:done|finished|sent|submitted|booked|signed|published)\b",
    r"^\[[xX]\]",  # a ticked checkbox in notes
    # A report in the past tense, with when it happened: "I profiled the harbour on the 8th", "Kevin reached
    # Marco on July 30", "the fix went in on the 19th", "it arrived Thursday", "opened on August 27th".
    rf"(?:^|\b(?:I|we|he|she|they|it|[A-Z][a-z]+)\s+)(?!{NOT_COMPLETIONS}\b)(?:\w+ed|built|ran|reran|sent|made|wrote|did|put|took|went\s+(?:in|to|out|off)|"
    rf"came|began|bought|found|gave|met|spoke|brought|held|paid|sold|won|got|had(?!\s+(?:a|an|no|to)\b)|laid|rang|told|left|set\s+up|went\s+up|heard\s+back|(?:was|were)\s+in)\b.{{0,80}}?{PAST_TIME}",
    # The present perfect reports a completion: "Aisha has built the templates", "I've got forty-three volunteers".
    rf"\b(?:has|have|'ve)\s+(?:now\s+|already\s+|just\s+|finally\s+)?(?!{NOT_COMPLETIONS}\b)(?:\w+ed|built|done|sent|made|written|got|gotten|put|set\s+up|"
    r"taken|run|paid|sold|found|given|bought|won)\b",
    r"\b(?:is|are)\s+(?:all\s+|now\s+)?in[.!]?$",  # "the personal asks are in"
    r"\b(?:has|have|'s|'ve)\s+been\s+(?:in|up|on)\b.{0,60}\bsince\b|\blive\s+since\b",  # "has been in since the 1st", "in the drive since the 9th"
)
CANCELLED = any_of(
    r"\bcancel(?:led|ed|ling|s)?\b", r"\bcall(?:ed|ing)?\s+off\b", r"\bscrap(?:ped|ping)?\b",
    r"\bno\s+longer\s+need", r"\bnot\s+needed\s+any\s*more\b", r"\bdon't\s+need\b.{0,60}\bany\s*more\b",
    r"\bnot\s+happening\b", r"\bstop(?:ping)?\s+work\s+on\b",
    r"\b(?:let's|we|I'm|I|I've|we've)\s+(?:just\s+)?drop(?:ped|ping)?\s+(?:it|that|this|the\s+\w+)\b",
    r"\b(?:I've|we've|I|we)\s+stopped\s+(?:it|that|this|the\s+\w+|work)\b", r"\bI\s+never\s+(?:placed|sent|made|booked)\b",
    r"\bwe'll\s+leave\s+it\b", r"\b(?:can|could)\s+be\s+dropped\b", r"\bdon't\s+bother\s+with\b",
    r"^(?:(?:yes|yeah|ok|okay|fine|right|so),?\s+)?drop\s+(?:it|that|this)\b", r"\bthat's\s+off\b(?!\s+\w+\s+(?:list|plate)\b)",
    r"\bwe\s+won't\s+need\s+(?:it|them|that|this)\b",
    r"\b(?:you|we)\s+can\s+forget\s+(?:about\s+)?(?:the|it|that|this)\b", r"\bno\s+point\s+(?:in\s+)?\w+ing\b",
    r"\b(?:tell|told|asked|ask)\s+(?:\w+\s+){1,2}to\s+stop\b",  # "I've told art to stop", "tell Ironbridge to stop costing it"
)  # fmt: skip
# Nobody free, no work done: "their teams are booked solid through November", "our translator is booked until
# September", "the fleet is booked for July".
UNAVAILABLE = re.compile(
    r"\bbooked\s+(?:solid|up\b|out\b|until|till|through|for\s+(?:the\s+)?(?:whole|rest|entire|weeks|months|"
    r"january|february|march|april|may|june|july|august|september|october|november|december))|\bfully\s+booked\b",
    re.I,
)
# "That's off my list" after "I sent it Monday" is done; said alone, the task was dropped.
DROPPED = re.compile(r"\boff\s+(?:my|the|our|his|her|their)\s+(?:list|plate)\b", re.I)
REASSIGNED = re.compile(
    "|".join(
        (
            _name(1) + r"\s*[,:]\s*(?:can|could|would|will)\s+you\s+take\b.{0,80}?\bover\b",
            _name(2) + r"\s*:\s*take\s+over\b",
            _name(3) + r"\s+(?:will|'ll|is\s+going\s+to|is\s+taking|takes)\s+(?:take\s+)?"
            r"(?:it|that|this|them|the\b.{0,60}?)?\s*over\b",
            r"\bhand(?:ing|ed|s)?\s+(?:it|that|this|them|the\b.{0,60}?)\s+(?:over\s+)?to\s+" + _name(4),
            _name(5) + r"\s+(?:owns|has)\s+(?:it|that|this)\s+now\b",
            # "Gareth, can you take the recruitment campaign off Sunita?"
            _name(6) + r"\s*[,:]\s*(?:can|could|would|will)\s+you\s+take\b.{0,80}?\boff\s+(?:[A-Z]|(?:my|his|her)\s+hands\b)",
        )
    )
)  # case-sensitive: a name is capitalized
# "I'll take the trailer over", "I'll take over the auction items": the speaker is the new owner.
TAKES_OVER = re.compile(
    r"\bI(?:'ll|\s+will|\s+can|'m\s+going\s+to)\s+take\s+(?:over\s+(?:the|it|that|this|them)\b|(?:it|that|this|them|the\b.{0,60}?)\s*over\b)"
    r"|^(?:(?:then|ok(?:ay)?|fine|right),?\s+)?(?:give|hand|pass)\s+(?:it|that|this|them)\s+(?:over\s+)?to\s+me\b",  # "Give it to me."
    re.I,
)
# More time asked for, which the meeting gives: "Can I have until the 14th?", "Give me until the 20th."
ASKS_FOR_TIME = re.compile(
    r"\b(?:can|could|may)\s+(?:I|we)\s+have\s+until\b|\bgive\s+(?:me|us)\s+until\b|\b(?:I|we)\s+need\s+until\b", re.I
)
# A statement, then a short question about it: "..., did everyone get it?", "..., right?"
QUESTION_TAG = re.compile(
    r"^(?P<statement>(?!(?:can|could|would|will|do|does|did|is|are|was|were|have|has|should|shall|what|when|who|how|"
    r"why|where|which)\b)[^?]{12,}?),\s+(?:\w+\s+){0,5}\w+\?$",
    re.I,
)
# A new date promised for one's own work: "I'll have it to Northfield by the 25th", "we can get it done by Friday".
PROMISE = re.compile(r"\b(?:I|we)(?:'ll|\s+will|'m\s+going\s+to|\s+can)\s+(?:have|get|finish|send|do)\b", re.I)
RESCHEDULED = any_of(
    r"\b(?:push(?:ed|ing)?|mov(?:e|ed|ing)|slip(?:s|ped|ping)?|slid(?:e|es|ing)?|postpon(?:e|ed|ing)|delay(?:ed|ing)?|"
    r"reschedul(?:e|ed|ing)|shift(?:ed|ing)?)\b.{0,60}\b(?:to|until|till)\b",
    r"\b(?:now|new)\s+(?:due|deadline|date)\b",
    r"\binstead\s+of\b",
    # a new date set against the old one: "I'll have it signed by the 13th of November, not the 30th"
    r"\d(?:st|nd|rd|th)?\b[^,.;]{0,30},\s+not\s+(?:on\s+)?(?:the\s+)?\d",
    ASKS_FOR_TIME.pattern,
)


def detect_changes(
    units: Sequence[Unit], segment_id: int | None, meeting_date: date | None, people: People
) -> list[KnowledgeChange]:
    """The change statements among one segment's sentences, in order."""
    found: list[KnowledgeChange] = []
    units = [line for unit in units for line in _lines(unit)]
    for position, unit in enumerate(units):
        core = clean(unit.text)
        for change, new_value in _changes_of(core, meeting_date, people, unit.speaker):
            # In a transcript what was just said is what a short "I sent it Friday" is about; in notes
            # the line before is another item.
            before = [u for u in units[max(position - CONTEXT_UNITS, 0) : position] if u.turn is not None]
            found.append(
                KnowledgeChange(
                    change="rescheduled" if change == "promised" else change,
                    evidence=clip(unit.text, 2000),
                    start_char=unit.start_char,
                    end_char=unit.end_char,
                    method="rules",
                    segment_id=segment_id,
                    start_turn=unit.turn,
                    end_turn=unit.turn,
                    speakers=(people.canonical(unit.speaker) or unit.speaker,) if unit.speaker else (),
                    context=clip(" ".join(u.text for u in before), CONTEXT_CHARS) or None,
                    new_value=new_value,
                    promised=change == "promised",
                )
            )
    return found


def _reported(new_date: date, meeting_date: date | None) -> date:
    """A date a move names, read as the past one when it was weeks ago: "the comparison moved to the 6th of January"
    said on 12 January is that 6 January, not next year's."""
    if meeting_date is None or (new_date - meeting_date).days < 300:
        return new_date
    last_year = safe_date(new_date.year - 1, new_date.month, new_date.day)
    return last_year if last_year and 0 <= (meeting_date - last_year).days <= 60 else new_date


def _before(pattern: re.Pattern[str], text: str, cue: re.Match[str]) -> bool:
    """Whether ``pattern`` occurs before the end of ``cue``: "if the quote comes back" is a plan, "the offer
    came in on the 8th: they pay if the pool stays open" a report."""
    return pattern.search(text, 0, cue.end()) is not None


def _lines(unit: Unit) -> list[Unit]:
    """A sentence cut at its line breaks: list items without a full stop are one sentence to the splitter."""
    if "\n" not in unit.text:
        return [unit]
    lines, start = [], unit.start_char
    for line in unit.text.split("\n"):
        stripped = line.strip()
        if stripped:
            offset = start + line.index(stripped)
            lines.append(Unit(offset, offset + len(stripped), stripped, unit.turn, unit.speaker))
        start += len(line) + 1
    return lines


def _changes_of(core: str, meeting_date: date | None, people: People, speaker: str | None = None) -> list[tuple[str, str | None]]:
    """(change, new value) pairs one sentence states; ``speaker`` takes over what they say they take over. A new date
    promised without saying it moves ("I'll have it by the 25th") is ``promised``: a reschedule only of a task the
    speaker owes that was due around then (``rag.timeline``)."""
    changes: list[tuple[str, str | None]] = []
    if reassigned := REASSIGNED.search(core):
        name = next(value for key, value in reassigned.groupdict().items() if key.startswith("name") and value)
        changes.append(("reassigned", people.canonical(name)))
    elif speaker and (TAKES_OVER.search(core)):
        changes.append(("reassigned", people.canonical(speaker)))
    handed_over = bool(changes)
    # "take over the one-pager, due March 11", "Omar, could you take it on, by Friday?": the new owner's date too
    if handed_over and (handover_date := due_date(core, meeting_date)):
        changes.append(("rescheduled", _reported(handover_date, meeting_date).isoformat()))
    if tagged := QUESTION_TAG.match(core):  # "I sent the spec on the 14th, did everyone get it?": a report
        core = tagged["statement"] + "."
    if core.endswith("?"):  # a question changes nothing, save asking someone to take a task over or for more time
        if not handed_over and ASKS_FOR_TIME.search(core) and (new_date := due_date(core, meeting_date)):
            changes.append(("rescheduled", new_date.isoformat()))
        return changes
    if CLOSED.search(core):
        changes.append(("closed", None))
    reported = UNAVAILABLE.sub("unavailable", core)
    done = DONE.search(reported)
    if done and (_before(PLAN, reported, done) or _before(NEGATED, reported, done)):
        done = None
    if CANCELLED.search(core) or (DROPPED.search(core) and not done):
        changes.append(("cancelled", None))
    elif done and not handed_over:  # "Give it to me, I've got all the numbers.": what is taken over is not done
        changes.append(("done", None))
    if handed_over:  # its date is read above
        return changes
    if RESCHEDULED.search(core) and (new_date := due_date(core, meeting_date)):
        changes.append(("rescheduled", _reported(new_date, meeting_date).isoformat()))
    elif PROMISE.search(core) and (new_date := due_date(core, meeting_date)):
        changes.append(("promised", new_date.isoformat()))
    return changes
