"""Character-level hygiene for untrusted text: what may appear in a name, what must never
be stored, and how stored text is made inert before a person or a model sees it.

Three jobs, one per function group:
- refuse: unpaired surrogates anywhere (they cannot be encoded as UTF-8, so such a string
  could never be sent back); control, format and line-separator characters in names
  (keys, tags), where they hide or reorder what a reader sees;
- normalise for matching: NFKC, drop invisible characters, map look-alike letters, so
  "іgnоrе" (Cyrillic) or "ig\u200bnore" match the same patterns as "ignore";
- display: strip terminal escape sequences and control characters, and turn markdown or
  HTML links and images into plain text, so showing a memory never runs, loads or hides
  anything.
"""

from __future__ import annotations

import re
import unicodedata

_SURROGATE = re.compile("[\ud800-\udfff]")

# Categories refused in names: Cc (C0/C1 controls, DEL, TAB, CR, LF), Cf (zero-width and
# bidi controls, soft hyphen, BOM), Zl/Zp (U+2028/U+2029), Cs (surrogates).
_NAME_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})

# Bidi embedding/override/isolate controls: they reorder how text is displayed.
_BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e"
_BIDI = re.compile(f"[{_BIDI_CONTROLS}]")
_RIGHT_TO_LEFT_OVERRIDE = re.compile("\u202e([^\u202c\n]*)")

# ANSI/ECMA-48 escape sequences: CSI (ESC [ or the 8-bit CSI), OSC (ESC ] ... BEL or ST),
# DCS/SOS/PM/APC strings, and two-character escapes.
_TERMINAL_ESCAPE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]P^_X]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]"
)
# Controls left after the escapes are gone (keeps \t and \n), plus display-reordering bidi.
_DISPLAY_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{_BIDI_CONTROLS}]")

# Letters from other scripts that look like Latin ones (a common subset of Unicode's
# confusables.txt: Cyrillic, Greek, and a few symbols NFKC leaves alone).
_CONFUSABLES = str.maketrans(
    {
        # Cyrillic
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "ѕ": "s",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "ӏ": "l",
        "һ": "h",
        "ɡ": "g",
        "ո": "n",
        "А": "a",
        "В": "b",
        "Е": "e",
        "К": "k",
        "М": "m",
        "Н": "h",
        "О": "o",
        "Р": "p",
        "С": "c",
        "Т": "t",
        "У": "y",
        "Х": "x",
        "Ѕ": "s",
        "І": "i",
        "Ј": "j",
        # Greek
        "α": "a",
        "β": "b",
        "ε": "e",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ω": "w",
        "Α": "a",
        "Β": "b",
        "Ε": "e",
        "Ζ": "z",
        "Η": "h",
        "Ι": "i",
        "Κ": "k",
        "Μ": "m",
        "Ν": "n",
        "Ο": "o",
        "Ρ": "p",
        "Τ": "t",
        "Υ": "y",
        "Χ": "x",
        # Symbols and Latin look-alikes
        "ı": "i",
        "ℓ": "l",
        "ǀ": "l",
        "∣": "l",
        "０": "0",
    }
)
_INVISIBLE = re.compile(f"[{_ZERO_WIDTH}{_BIDI_CONTROLS}]")
# Text with look-alikes but no Latin letter (ordinary Russian or Greek) cannot hide a Latin
# phrase and skips the mapping, the slow step on long non-Latin text.
_CONFUSABLE = re.compile("[" + "".join(chr(code) for code in _CONFUSABLES) + "]")
_LATIN = re.compile("[A-Za-z]")
_ZERO_WIDTH_RUN = re.compile(f"[{_ZERO_WIDTH}]+")
# What hides ASCII in other characters: a format character (zero-width, soft hyphen,
# bidi), a fullwidth or mathematical letter or digit, or a look-alike touching ASCII.
_LOOKALIKES = "".join(chr(code) for code in _CONFUSABLES)
_DISGUISE = re.compile(
    f"[{_ZERO_WIDTH}{_BIDI_CONTROLS}\u2061-\u2064\uff01-\uff5e\U0001d400-\U0001d7ff]"
    f"|[A-Za-z0-9_][{_LOOKALIKES}]|[{_LOOKALIKES}][A-Za-z0-9_]"
)

# Markdown images and links, and HTML <img>/<a> tags (after XML escaping they are inert,
# but a model may copy them into output that a client renders).
_MD_IMAGE = re.compile(r"!\[([^\]\n]{0,200})\]\(\s*<?([^)\s>]{1,2000})>?(?:\s+\"[^\"\n]*\")?\s*\)")
_MD_LINK = re.compile(r"\[([^\]\n]{1,200})\]\(\s*<?([^)\s>]{1,2000})>?(?:\s+\"[^\"\n]*\")?\s*\)")
_HTML_IMG = re.compile(r"<\s*img\b[^>]{0,2000}?>", re.I)
_HTML_SRC = re.compile(r"""\bsrc\s*=\s*["']?([^"'\s>]+)""", re.I)
_HTML_ANCHOR = re.compile(r"""<\s*a\b[^>]{0,2000}?\bhref\s*=\s*["']?([^"'\s>]+)[^>]*>""", re.I)


# -- refuse ----------------------------------------------------------------------------------


def unpaired_surrogate(text: str) -> str | None:
    """'U+D800' if the text holds an unpaired surrogate (not encodable as UTF-8), else None."""
    match = _SURROGATE.search(text)
    return f"U+{ord(match.group()):04X}" if match else None


def forbidden_name_character(text: str) -> str | None:
    """A description of the first control, format or separator character, else None.
    Callers bound the length first: this looks at every character."""
    for ch in text:
        if unicodedata.category(ch) in _NAME_FORBIDDEN_CATEGORIES:
            name = unicodedata.name(ch, "a control character")
            return f"U+{ord(ch):04X} ({name.lower()})"
    return None


# -- normalise for matching ------------------------------------------------------------------


def normalise_for_matching(text: str) -> str:
    """The text as pattern matching should see it: compatibility forms folded (NFKC),
    invisible characters dropped, look-alike letters mapped to Latin, case folded; a
    right-to-left override's span is also appended reversed, as it is displayed."""
    if text.isascii():  # the common case, and NFKC and the mappings would change nothing
        return text.lower()
    reversed_spans = [m.group(1)[::-1] for m in _RIGHT_TO_LEFT_OVERRIDE.finditer(text)]
    if reversed_spans:
        text = text + "\n" + "\n".join(reversed_spans)
    text = unicodedata.normalize("NFKC", text)
    text = _INVISIBLE.sub("", text)
    if _LATIN.search(text) and _CONFUSABLE.search(text):
        text = text.translate(_CONFUSABLES)
    return text.casefold()


def _ascii_twin(ch: str) -> str:
    """The ASCII character `ch` is written for, case kept ("ｌ" and "𝐥" are "l", Cyrillic
    "К" is "K"); "" for an invisible one (format characters: zero-width, soft hyphen,
    bidi controls); `ch` itself when it stands for nothing in ASCII."""
    if unicodedata.category(ch) == "Cf":
        return ""
    compatible = unicodedata.normalize("NFKC", ch)
    if len(compatible) == 1 and compatible.isascii():
        return compatible
    latin = _CONFUSABLES.get(ord(ch))
    if isinstance(latin, str):
        return latin.upper() if ch.isupper() else latin
    return ch


def fold_to_ascii(text: str) -> tuple[str, list[int]] | None:
    """The text as a scanner for ASCII shapes (secrets) should read it: invisible
    characters dropped, fullwidth and look-alike letters as the ASCII they look like,
    case kept; with, for each character of the result, the index in `text` it came
    from. None when that changes nothing: every ASCII text, and text with nothing that
    disguises ASCII (ordinary Russian or Greek, whose words are not folded: 5 ms on 64 KB)."""
    if text.isascii() or not _DISGUISE.search(text):
        return None
    twins = {ord(ch): _ascii_twin(ch) or "\x00" for ch in set(text) if not ch.isascii()}
    twins = {code: twin for code, twin in twins.items() if twin != chr(code)}
    if not twins:
        return None
    mapped = text.translate(twins)
    if "\x00" not in mapped:
        return mapped, list(range(len(text)))
    kept = [i for i, ch in enumerate(mapped) if ch != "\x00"]
    return mapped.replace("\x00", ""), kept


def has_hidden_characters(text: str) -> bool:
    """Bidi controls, or zero-width characters splitting a Latin word ("ig\u200bnore")."""
    if text.isascii():
        return False
    if _BIDI.search(text):
        return True
    for run in _ZERO_WIDTH_RUN.finditer(text):
        before, after = text[run.start() - 1 : run.start()], text[run.end() : run.end() + 1]
        if before.isascii() and before.isalpha() and after.isascii() and after.isalpha():
            return True
    return False


# -- display ---------------------------------------------------------------------------------


def strip_terminal_controls(text: str) -> str:
    """Text safe to print to a terminal or put in a prompt: escape sequences (colours,
    cursor moves, OSC hyperlinks and title changes), control characters other than tab and
    newline, and bidi reordering controls are removed."""
    if not _DISPLAY_CONTROL.search(text):
        return text
    return _DISPLAY_CONTROL.sub("", _TERMINAL_ESCAPE.sub("", text))


def links_as_plain_text(text: str) -> str:
    """Markdown/HTML images and links rewritten as plain words, so nothing renders as an
    image (which a client would fetch, leaking the URL's query) or a clickable link:
    `![x](https://h/?q=1)` becomes `[image "x": https://h/?q=1]`."""
    if "](" in text:
        text = _MD_IMAGE.sub(lambda m: f'[image "{m.group(1)}": {m.group(2)}]', text)
        text = _MD_LINK.sub(lambda m: f"{m.group(1)} (link: {m.group(2)})", text)
    if "<" in text:
        text = _HTML_IMG.sub(_html_image, text)
        text = _HTML_ANCHOR.sub(lambda m: f"(link: {m.group(1)}) ", text)
    return text


def _html_image(match: re.Match[str]) -> str:
    src = _HTML_SRC.search(match.group())
    return f"[image: {src.group(1)}]" if src else "[image]"


_JSON_INVISIBLE = re.compile(f"[\x7f-\x9f\u2028\u2029{_ZERO_WIDTH}{_BIDI_CONTROLS}]")


def json_text_for_terminal(encoded: str) -> str:
    """JSON text (from json.dumps with ensure_ascii=False) with the characters JSON leaves raw
    but a terminal acts on or hides (DEL, C1 controls such as the 8-bit CSI, line
    separators, zero-width and bidi controls) written as \\u escapes: the same data,
    shown as it is."""
    return _JSON_INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)


def for_display(text: str) -> str:
    """Both display rules: no terminal controls, links as plain text."""
    return links_as_plain_text(strip_terminal_controls(text))
