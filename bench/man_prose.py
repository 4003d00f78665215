"""Readable prose from a man page's troff source, for the scale corpus (bench/scale_sources.py).

Not a troff renderer: enough of man(7) and mdoc(7) to give the NAME line ("ls - list
directory contents") and the paragraphs of DESCRIPTION as a person would read them, with
the font changes, special characters and macro names gone. Option lists (.TP, .IP, .It),
code blocks (.nf/.fi, .EX/.EE, .Bd/.Ed), tables and macro definitions are left out: they
are not prose, and the benchmark wants texts a person could have stored as a memory."""

from __future__ import annotations

import re

# Paragraph breaks; the tagged ones (.TP, .IP, .It) start an option list, which is left out
# up to the next plain paragraph.
_PLAIN_BREAKS = {"PP", "P", "LP", "Pp", "sp", "br", "SS", "Ss", "RS", "RE", "HP"}
_TAGGED = {"TP", "IP", "It", "Bl", "El", "TQ"}
_SKIPPED_BLOCKS = {
    "nf": "fi",
    "EX": "EE",
    "Bd": "Ed",
    "TS": "TE",
    "de": "..",
    "ig": "..",
    "EQ": "EN",
}
# man(7) font macros: their arguments are text (the alternating ones join without spaces).
_FONT = {"B", "I", "SM", "SB"}
_ALTERNATING = {"BR", "RB", "BI", "IB", "IR", "RI"}
# mdoc(7) inline macros: dropped where they name a font or a kind of word, the words kept.
_MDOC_INLINE = set(
    "Ad An Ar At Bsx Bx Cd Cm Dv Dx Em Er Ev Fa Fd Fn Ft Fx Ic Li Lk Ms Mt Nm No Nx Ox Pa "
    "Sx Sy Tn Va Vt Dq Do Dc Ql Qq Qo Qc Sq So Sc Pq Po Pc Op Oo Oc Aq Ao Ac Bq Bo Bc "
    "Brq Bro Brc Eo Ec Nd".split()
)
# mdoc punctuation arguments, attached to the word before them.
_CLOSING = {".", ",", ";", ":", ")", "]", "?", "!"}
_SPECIAL = {
    "em": "-",
    "en": "-",
    "hy": "-",
    "mi": "-",
    "lq": '"',
    "rq": '"',
    "dq": '"',
    "oq": "'",
    "cq": "'",
    "aq": "'",
    "co": "(c)",
    "rg": "(R)",
    "tm": "(TM)",
    "->": "->",
    "<=": "<=",
    ">=": ">=",
    "mu": "x",
    "ti": "~",
    "ha": "^",
    "rs": "\\",
    "ba": "|",
}
_ESCAPE = re.compile(
    r"""\\(?:
        ".*$                                  # a comment, to the end of the line
      | [fF](?:\(..|\[[^]]*\]|.)             # a font change
      | s[+-]?(?:\(\d\d|\[\d+\]|\d)             # a point size
      | [*n][+-]?(?:\(..|\[[^]]*\]|.)        # a string or a register
      | [hvwoDlLbxXYkzZR]'[^']*'              # motions, widths, drawing
      | \((?P<special>..)                     # a special character: \(em
      | \[(?P<named>[^]]*)\]                  # a named one: \[em]
      | (?P<char>.)
    )""",
    re.VERBOSE,
)
_PRINTED = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " "}


def _escape(match: re.Match[str]) -> str:
    special = match.group("special") or match.group("named")
    if special is not None:
        return _SPECIAL.get(special, "")
    char = match.group("char")
    if char is None or char in "&|^%c,/:)!{}":
        return ""
    return _PRINTED.get(char, char)


def unescape(text: str) -> str:
    """One line's troff escapes turned into the characters they print (or nothing), in one
    pass: a printed backslash is never read as the start of another escape."""
    return _ESCAPE.sub(_escape, text)


def _arguments(line: str) -> list[str]:
    """A macro line's arguments: words, or "quoted words" as one."""
    return [a[1:-1] if a.startswith('"') else a for a in re.findall(r'"[^"]*"|\S+', line)]


def _ends(line: str, end: str) -> bool:
    """Whether `line` closes a block that `end` closes (".." for a macro definition)."""
    if end == "..":
        return line.strip() == ".."
    return line.startswith((".", "'")) and line[1:].split()[:1] == [end]


def _macro_text(name: str, args: list[str]) -> str | None:
    """The text a macro line prints, or None for a macro that prints none here."""
    if name in _FONT:
        return " ".join(args)
    if name in _ALTERNATING:
        return "".join(args)
    if name in _MDOC_INLINE or name in ("Fl", "Ux"):
        words: list[str] = []
        flag = False
        for arg in [name, *args]:
            if arg == "Fl":
                flag = True
            elif arg == "Ux":
                words.append("UNIX")
            elif arg in _MDOC_INLINE or arg == "Ns":
                continue
            elif arg in _CLOSING and words:
                words[-1] += arg
            else:
                words.append(f"-{arg}" if flag else arg)
                flag = False
        text = " ".join(words)
        return f"- {text}" if name == "Nd" else text
    if name == "Xr" and args:
        return f"{args[0]}({args[1]})" if len(args) > 1 else args[0]
    return None


def sections(source: str, wanted: tuple[str, ...]) -> dict[str, list[str]]:
    """The prose paragraphs of each `wanted` section (by its upper-case name), in order."""
    found: dict[str, list[str]] = {}
    section = ""
    paragraph: list[str] = []
    skipping_until: str | None = None
    in_list = False
    page_name = ""

    def close() -> None:
        text = " ".join(" ".join(paragraph).split())
        if text and section in wanted and not in_list:
            found.setdefault(section, []).append(text)
        paragraph.clear()

    for raw in source.splitlines():
        line = raw.rstrip()
        if skipping_until is not None:
            if _ends(line, skipping_until):
                skipping_until = None
            continue
        if line.startswith((".", "'")):
            body = line[1:].strip()
            if not body or body.startswith(('\\"', "\\}")):
                continue
            name, _, rest = body.partition(" ")
            if name in ("SH", "Sh"):
                close()
                section = " ".join(unescape(a) for a in _arguments(rest)).upper()
                in_list = False
            elif name in _SKIPPED_BLOCKS:
                close()
                skipping_until = _SKIPPED_BLOCKS[name]
            elif name in _TAGGED:
                close()
                in_list = True
            elif name in _PLAIN_BREAKS:
                close()
                if name not in ("RS", "RE", "br", "sp"):
                    in_list = False
            else:
                args = [unescape(a) for a in _arguments(rest)]
                if name == "Nm":  # mdoc: the page's name once, then `.Nm` alone prints it
                    page_name = page_name or (args[0] if args else "")
                    args = args or [page_name]
                text = _macro_text(name, args)
                if text:
                    paragraph.append(text)
        elif not line.strip():
            close()
        else:
            paragraph.append(unescape(line))
    close()
    return found
