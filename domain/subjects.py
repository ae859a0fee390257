"""Domain layer: whose fact a statement states, and whom a question asks about (pure Python).

A memory library answers questions about the person it serves. Conversations are full of
statements about other people with the same words and another value: "My sister lives in
Oslo." next to "I live in Porto."; "My wife's manager is Farid." next to "My manager is
Bruno.". Embeddings and keyword scores see the same words in both. These functions read the
grammatical subject that English chat puts first, so a search can tell them apart
(``RetrievalConfig.third_party_penalty``, ARCHITECTURE.md D21):

* :func:`third_party_of` — the relation word ("sister", "wife") when a statement is about
  someone the speaker names by their relation to them, ``None`` otherwise (about the speaker,
  about no one in particular, or undecided);
* :func:`asked_relations` — for a question in the first person ("Where do I live?", "What did
  my sister recommend?"), the relation words it names; ``None`` for any other question;
* :func:`names_in` — the names a question asks about ("anna" in "What did I buy for Anna?").

They are heuristics over English and stay silent (``None``) on anything they do not
recognise, including other languages: a statement they cannot place is never demoted.
"""

from __future__ import annotations

import re
from typing import Final

from .text import word_tokens

__all__ = ["RELATION_WORDS", "STATEMENTS_READ", "asked_relations", "names_in", "third_party_of"]

RELATION_WORDS: Final = frozenset(
    """
    mother mom mum mommy mummy mama father dad daddy papa parent parents stepmother stepfather
    stepmom stepmum stepdad sister sisters brother brothers sibling siblings stepsister stepbrother
    son sons daughter daughters stepson stepdaughter kid kids child children baby babies
    wife husband spouse partner fiance fiancee fiancé fiancée girlfriend boyfriend ex
    cousin cousins aunt aunts auntie uncle uncles niece nieces nephew nephews
    grandmother grandma granny nana grandfather grandpa granddad grandparent grandparents
    grandson grandsons granddaughter granddaughters grandchild grandchildren grandkids
    friend friends buddy buddies pal pals bestie roommate roommates flatmate flatmates housemate
    housemates neighbour neighbours neighbor neighbors colleague colleagues coworker coworkers
    classmate classmates teammate teammates
    """.split()
)
"""Words for people named by their relation to the speaker (family, partners, friends,
neighbours, peers). Roles that describe the speaker's own situation ("my manager", "my
doctor", "my landlord") are not here: "My manager is Bruno." is a fact about the speaker."""

_FIRST_PERSON: Final = frozenset("i me my mine myself we us our ours ourselves im ive".split())
_SELF_SUBJECTS: Final = frozenset("i im ive we".split())
_POSSESSIVES: Final = frozenset({"my", "our"})
_LEADING_FILLER: Final = re.compile(
    r"^\W*(?:(?:also|actually|well|oh|ok|okay|so|btw|and|but|yes|yeah|no|hey|hi|hello|anyway|honestly)\b\W*)+",
    re.IGNORECASE,
)
_SPEAKER_TOKENS: Final = frozenset("i me we us myself ourselves".split())
_SENTENCE: Final = re.compile(r"[^.!?\n]+[.!?]*")
_FIRST_CLAUSE: Final = re.compile(
    r"[,;:()]|\s[-\u2013\u2014]\s|\b(?:so|but|because|although|though|while)\b", re.IGNORECASE
)

_SELF: Final = "\x00self"

STATEMENTS_READ: Final = 3
"""How many statements of a text :func:`third_party_of` reads: who a message is about shows in
its opening, and a long message (a pasted document, an assistant's essay) is not read whole."""
_CLAUSE_CHARS: Final = 300
_TEXT_CHARS: Final = 3000


def _sentence_subject(sentence: str) -> str | None:
    """``_SELF`` when the sentence's subject is the speaker, a relation word when it is someone
    named by their relation to the speaker, ``None`` when neither is recognised."""
    head = word_tokens(_FIRST_CLAUSE.split(_LEADING_FILLER.sub("", sentence), maxsplit=1)[0])
    if not head:
        return None
    if head[:1] == ["user"]:  # "User's sister lives ..." as some extractors write it
        head = ["the", *head]
    if head[:2] == ["the", "user"]:  # extracted memories: "The user lives ...", "The user's wife ..."
        head = ["my", *head[3:]] if head[2:3] == ["s"] else ["i"]
    if head[0] in _SELF_SUBJECTS:
        return _SELF
    if head[0] in _POSSESSIVES and len(head) > 1:
        if head[1] not in RELATION_WORDS:
            return _SELF  # "my favourite sport", "my manager", "my birthday"
        if any(token in _SPEAKER_TOKENS for token in head[2:]):
            return _SELF  # "my sister and I moved ...", "my kids live with me"
        return head[1]
    return None


def third_party_of(text: str) -> str | None:
    """The relation word of the person a statement is about ("sister" for "My sister lives in
    Oslo."; "wife" for "My wife's manager is Farid."), or ``None``.

    The text is read statement by statement (questions skipped), at most
    :data:`STATEMENTS_READ` of them, each judged by its first clause. A text with a statement
    about the speaker ("I", "we", "my <not a relation>", "the user", or a first clause that
    names the speaker too: "my sister and I", "my kids live with me") is about the speaker
    (``None``); otherwise the first statement that opens with "my/our <relation>" (or, as
    extracted memories put it, "the user's <relation>") names the third party. Text that opens
    any other way ("It", "The", a name, another language) gives ``None``."""
    other: str | None = None
    read = 0
    for match in _SENTENCE.finditer(text, 0, _TEXT_CHARS):
        sentence = match.group().strip()
        if not sentence or sentence.endswith("?"):
            continue
        subject = _sentence_subject(sentence[:_CLAUSE_CHARS])
        if subject == _SELF:
            return None
        if subject is not None and other is None:
            other = subject
        read += 1
        if read >= STATEMENTS_READ:
            break
    return other


def asked_relations(query: str) -> frozenset[str] | None:
    """The relation words a first-person question names (empty when it asks about the speaker
    alone: "Where do I live?"), or ``None`` when the question is not in the first person."""
    tokens = word_tokens(query)
    if not any(token in _FIRST_PERSON for token in tokens):
        return None
    return frozenset(token for token in tokens if token in RELATION_WORDS)


_CAPITALISED: Final = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z]\w*)")


def names_in(query: str) -> frozenset[str]:
    """The capitalised words of a question other than its first word and "I", lower-cased: the
    names it asks about ("anna" in "What did I buy for Anna?"). A statement about a relative
    that mentions one of them ("My sister Anna loves jazz.") answers the question and is not
    demoted."""
    return frozenset(
        word.lower()
        for word in _CAPITALISED.findall(query.strip())
        if word != "I"
    )
