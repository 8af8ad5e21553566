"""One name per person: the canonical form of a speaker label or a name someone says.

A task's owner is written the way a careful note-taker writes it: the person's fullest name
among the meeting's speakers (and, when given, the names the project already knows), whatever
form was spoken. "Dana Kim (Firmware)" (a Teams label with the department) is Dana Kim; "Dana",
"dana" and "Kim" are Dana Kim when she is the only Dana / Kim; when two people share the name
("Dana Kim" and "Dana Lee") a bare "Dana" stays "Dana" rather than picking one. A title in the
label names its person too: "Chief, can you ..." is Daniel Ortiz when he speaks as "Daniel Ortiz
(Police Chief)" and no one else is a chief. Role labels
("Project Manager", "Marketing") and generic labels ("Speaker 1") are names of their own and stay
as they are.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

# A trailing "(Firmware)" or "[Contoso]": the label's department, company or role, not the name.
QUALIFIER = re.compile(r"\s*[(\[][^)\]]*[)\]]\s*$")


def clean_label(label: str) -> str:
    """A speaker label without its trailing qualifiers, whitespace normalised."""
    text = " ".join(label.split())
    while (stripped := QUALIFIER.sub("", text)) != text and stripped:
        text = stripped
    return text


def label_titles(label: str) -> frozenset[str]:
    """The words of a label's qualifiers: "Daniel Ortiz (Police Chief)" -> {"police", "chief"}."""
    text = " ".join(label.split())
    words: set[str] = set()
    while (match := QUALIFIER.search(text)) and match.start() > 0:
        words.update(_tokens(match.group().strip(" ()[]")))
        text = text[: match.start()]
    return frozenset(words)


def _tokens(name: str) -> tuple[str, ...]:
    return tuple(name.casefold().replace(".", "").split())


@dataclass(frozen=True)
class People:
    """The names of one meeting's speakers, and the names its project already knows."""

    names: tuple[str, ...]
    known: tuple[str, ...] = ()
    titles: tuple[tuple[str, frozenset[str]], ...] = ()  # a speaker's name and the words of its label's qualifiers
    leader: str | None = None  # who speaks most: who chairs the meeting, and whose conclusions settle things

    @classmethod
    def of(cls, speakers: Iterable[str | None], known: Iterable[str | None] = ()) -> People:
        """One entry per written form (cleaned, first spelling kept), the meeting's own before the project's."""
        labels = [label for label in speakers if label]
        titles: dict[str, frozenset[str]] = {}
        for label in labels:
            titles.setdefault(clean_label(label), label_titles(label))
        turns = Counter(clean_label(label) for label in labels)
        leader = turns.most_common(1)[0][0] if turns else None  # ties: the first to speak
        return cls(_forms(labels), _forms(known), tuple((name, words) for name, words in titles.items() if words), leader)

    def leads(self, speaker: str | None) -> bool:
        """Whether ``speaker`` (a label) is the meeting's leader: the speaker of the most turns given."""
        return speaker is not None and self.leader is not None and clean_label(speaker) == self.leader

    def canonical(self, name: str | None) -> str | None:
        """The one form of the person ``name`` refers to; ``name`` itself (cleaned) when it names no one known.

        The meeting's speakers decide first (a "Dana" of this meeting is its Dana Kim, not another Dana
        of the project); then a name the project knows in a fuller form takes that form ("Dana", the
        label of today's speaker, or "Kim" is the project's Dana Kim) when only one fits.
        """
        if name is None:
            return None
        mention = clean_label(name)
        if not _tokens(mention):
            return None
        in_meeting = _resolve(mention, self.names) or self._titled(mention) or mention
        return _resolve(in_meeting, (*self.names, *self.known)) or in_meeting

    def knows(self, name: str) -> bool:
        """Whether ``name`` refers to a speaker of the meeting or a person the project knows."""
        wanted = _tokens(clean_label(name))
        return bool(wanted) and any(_refers_to(wanted, _tokens(n)) for n in (*self.names, *self.known))

    def _titled(self, mention: str) -> str | None:
        """The one speaker whose label's title is this one word ("Chief", "Chair"), if only one has it."""
        wanted = _tokens(mention)
        titled = [name for name, words in self.titles if len(wanted) == 1 and wanted[0] in words]
        return titled[0] if len(titled) == 1 else None


def _forms(names: Iterable[str | None]) -> tuple[str, ...]:
    forms: dict[tuple[str, ...], str] = {}
    for raw in names:
        name = clean_label(raw or "")
        if name:
            forms.setdefault(_tokens(name), name)
    return tuple(forms.values())


def _resolve(mention: str, names: tuple[str, ...]) -> str | None:
    """The one name of ``names`` that ``mention`` refers to, fullest form; None when none or several fit."""
    wanted = _tokens(mention)
    matches = [n for n in names if _refers_to(wanted, _tokens(n))]
    # "Dana" and "Dana Kim" both match "Dana": the fuller form is the person.
    fullest = [m for m in matches if not any(o != m and _refers_to(_tokens(m), _tokens(o)) for o in matches)]
    if len(fullest) == 1:
        return fullest[0]
    exact = [m for m in matches if _tokens(m) == wanted]
    return exact[0] if exact else None


def _refers_to(mention: tuple[str, ...], full: tuple[str, ...]) -> bool:
    """``mention`` names ``full``: the same words, its first words, or one of its words ("Kim" of "Dana Kim")."""
    if mention == full or full[: len(mention)] == mention:
        return True
    return len(mention) == 1 and mention[0] in full and not _is_generic(full)


def _is_generic(full: tuple[str, ...]) -> bool:
    """Labels like "Speaker 1" or "Participant 2": their words name no one."""
    return len(full) == 2 and full[1].isdigit()
