"""Conversations (LoCoMo, or REALTALK's and BEAM's converted format: bench/locomo.py) with
what an agent's memories would carry beyond their words: the session each turn was written
in (a session of the data set = one `session_id`), its position in that session, and its
date."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ANSWERABLE = (1, 2, 3, 4)
CATEGORY_NAMES: dict[int | str, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "inference / commonsense",
    4: "single hop",
}


@dataclass(frozen=True)
class LabTurn:
    key: str  # dia_id
    speaker: str
    text: str
    session: int  # sessions numbered in the order they first appear
    position: int  # within its session, from 0
    date: str

    @property
    def value(self) -> str:
        """What the benchmark stores (the protocol's memory value)."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class LabQuestion:
    text: str
    category: int | str  # LoCoMo's 1-4, the other sets' names
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class LabConversation:
    name: str
    turns: tuple[LabTurn, ...]
    questions: tuple[LabQuestion, ...]
    dataset: str = ""  # the folder it came from


def load(path: Path) -> LabConversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    if "turns" in data and "questions" in data:
        return _load_turns_format(path, data)
    numbers = sorted(
        int(name.removeprefix("session_"))
        for name, turns in data.items()
        if name.startswith("session_")
        and name.removeprefix("session_").isdigit()
        and isinstance(turns, list)
    )
    turns = tuple(
        LabTurn(
            key=str(turn["dia_id"]),
            speaker=str(turn["speaker"]),
            text=str(turn["text"]),
            session=number,
            position=position,
            date=str(data.get(f"session_{number}_date_time", "")),
        )
        for number in numbers
        for position, turn in enumerate(data[f"session_{number}"])
    )
    questions = tuple(
        LabQuestion(str(qa["question"]), int(qa["category"]), tuple(str(e) for e in qa["evidence"]))
        for qa in data.get("qa", [])
        if qa.get("category") in ANSWERABLE and qa.get("evidence")
    )
    return LabConversation(path.stem, turns, questions, path.parent.name)


def _load_turns_format(path: Path, data: dict[str, Any]) -> LabConversation:
    numbers: dict[str, int] = {}
    positions: dict[str, int] = {}
    turns = []
    for turn in data["turns"]:
        session = str(turn["session"])
        number = numbers.setdefault(session, len(numbers) + 1)
        position = positions.get(session, 0)
        positions[session] = position + 1
        turns.append(
            LabTurn(
                str(turn["id"]),
                str(turn["speaker"]),
                str(turn["text"]),
                number,
                position,
                str(turn.get("date", "")),
            )
        )
    questions = tuple(
        LabQuestion(str(q["q"]), str(q["category"]), tuple(str(e) for e in q["evidence"]))
        for q in data["questions"]
        if q.get("evidence")
    )
    return LabConversation(path.stem, tuple(turns), questions, path.parent.name)


def load_all(directory: Path) -> list[LabConversation]:
    paths = sorted(directory.glob("*.json"))
    if not paths:
        raise FileNotFoundError(f"no conversation files (*.json) in {directory}")
    return [load(path) for path in paths]
