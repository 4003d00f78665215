"""Make the reference vectors that tests/semantic/test_onnx_embedder.py holds the ONNX graph to:
a few hundred texts embedded once by sentence-transformers (torch), the implementation
all-MiniLM-L6-v2 is published for.

Run once, in an environment with the optional extra (`pip install -e
'.[sentence-transformers]'`), from the repository's root:

    python -m bench.reference_vectors

It writes tests/data/reference_texts.json (the texts, and the versions that embedded
them) and tests/data/reference_vectors.npy (float32, one row per text, in order). Both are
committed: the tests and CI compare against them without torch. The texts are picked
here with a fixed seed from this repository's own prose and code plus hand-written edge
cases (empty and blank strings, control and zero-width characters, many scripts, emoji,
code, texts far past the model's 256 word pieces so truncation is covered); once written,
the JSON is the source, not this script.

Each text is embedded alone (batch size 1): no padding enters the reference."""

from __future__ import annotations

import json
import os
import random
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TEXTS_FILE = ROOT / "tests" / "data" / "reference_texts.json"
VECTORS_FILE = ROOT / "tests" / "data" / "reference_vectors.npy"
SEED = 25

EDGE_CASES = [
    "",
    " ",
    "   ",
    "\n",
    "\t\n  \r\n",
    "\u200b",  # zero-width space
    "\u00a0\u2003",  # no-break and em spaces
    "\x00\x01\x07",  # control characters
    ".",
    "?!",
    "...",
    "-",
    "a",
    "I",
    "0",
    "42",
    "[PAD]",
    "[CLS] [SEP]",
    "[UNK]",
    "[MASK] is a token",
    "short",
    "how do we run the tests?",
    "The office cat is called Miso",
    "name of our feline",
    "Caroline: I went to the LGBTQ support group yesterday and it was powerful.",
    "Ünïcödé, 日本語のテキスト, emoji 🙂 and punctuation!?",
    "Grüße aus München: Straße, Äpfel, Öl und Übermut.",
    "Ça va? L'été dernier, à Noël, nous étions très occupés.",
    "¿Dónde está la biblioteca? ¡Mañana!",
    "Привет, как дела? Москва — столица России.",
    "Γειά σου κόσμε· η θάλασσα είναι γαλάζια.",
    "مرحبا بالعالم، هذا نص باللغة العربية.",
    "שלום עולם, זהו טקסט בעברית.",
    "नमस्ते दुनिया, यह हिंदी में एक वाक्य है।",
    "你好，世界。我们明天部署新版本。",
    "こんにちは世界。テストはすべて成功しました。",
    "안녕하세요 세계, 배포는 내일입니다.",
    "สวัสดีชาวโลก",
    "e\u0301te\u0301 (combining accents) vs été (composed)",
    "🙂🙃😀👍🏽👨‍👩‍👧‍👦🇫🇷",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝖒𝖆𝖙𝖍 𝒻ℴ𝓃𝓉𝓈 and ﬁ ligatures",
    "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ １２３",
    "def main(argv: list[str]) -> int:  # code, identifiers_with_underscores, CamelCase",
    "SELECT key, value FROM memories WHERE agent_id = ? AND scope IN ('agent', 'swarm');",
    '{"key": "deploy", "value": "make deploy ENV=staging", "tags": ["ops", "ci"]}',
    "git rebase -i HEAD~3 && git push --force-with-lease origin feature/x",
    "export MEMORY_MCP_DB=~/.local/share/memory-mcp/memory.db; memory-mcp serve",
    "https://example.com/path?query=1&other=%20encoded#fragment",
    "user@example.org, +1 (555) 010-9999, 2026-11-25T05:32:20Z",
    "0x7fffffff 3.14159 -1e-12 1,000,000 50% $12.99 €5",
    "ERROR 2026-11-25 05:32:20,123 memory_mcp.app.root: could not load the embedding model",
    "We deploy to staging with `make deploy ENV=staging` after the migrations ran. " * 3,
    " ".join(f"word{i} of a very long memory about deployments" for i in range(120)),
    "x" * 5_000,
    "ab " * 700,
    "日本語" * 400,
    "🙂" * 300,
    "\n".join(f"line {i}: value_{i} = compute({i}, cache=True)" for i in range(80)),
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 40,
]


def prose_and_code() -> list[str]:
    """Paragraphs of the repository's docs and blocks of its code, as they stand."""
    pieces: list[str] = []
    for doc in sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")]):
        pieces += [p.strip() for p in doc.read_text(encoding="utf-8").split("\n\n")]
    for module in sorted((ROOT / "memory_mcp").glob("*.py")):
        pieces += re.split(r"\n(?=def |class |async def )", module.read_text(encoding="utf-8"))
    return [p for p in pieces if p.strip()]


def pick_texts() -> list[str]:
    rng = random.Random(SEED)
    pieces = prose_and_code()
    texts = list(EDGE_CASES)
    # Short ones: a line or a sentence; middle ones: a paragraph or a function.
    for _ in range(90):
        lines = [line for line in rng.choice(pieces).splitlines() if line.strip()]
        texts.append(rng.choice(lines).strip())
    short_pieces = [p for p in pieces if 200 <= len(p) <= 1_200]
    texts += rng.sample(short_pieces, 90)
    # Long ones, past 256 word pieces: several pieces joined, cut at 1,500-8,000 chars.
    for _ in range(50):
        joined = "\n\n".join(rng.sample(pieces, 6))
        texts.append(joined[: rng.randint(1_500, 8_000)])
    # Random characters from several scripts, and words from a small vocabulary.
    alphabets = ["abcdefghijklmnopqrstuvwxyz   ", "αβγδεζηθικλμν ", "абвгдежзий ", "日本語中文字 ",
                 "0123456789+-*/=()[]{} ", "éèêëàâäôöûüç "]  # fmt: skip
    for _ in range(20):
        alphabet = "".join(rng.sample(alphabets, 2))
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 400))))
    return texts


def main() -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    from memory_mcp.semantic.onnx_model import weights_dir

    torch.set_num_threads(1)
    model = SentenceTransformer(str(weights_dir()), device="cpu")
    texts = pick_texts()
    rows = [
        model.encode([text], batch_size=1, normalize_embeddings=True, convert_to_numpy=True)[0]
        for text in texts
    ]
    vectors = np.asarray(rows, dtype=np.float32)
    meta = {
        "made_by": "python -m bench.reference_vectors",
        "model": str(weights_dir().name),
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "max_seq_length": model.max_seq_length,
        "texts": texts,
    }
    TEXTS_FILE.write_text(json.dumps(meta, ensure_ascii=False, indent=0) + "\n", "utf-8")
    np.save(VECTORS_FILE, vectors)
    print(f"{len(texts)} texts -> {VECTORS_FILE} {vectors.shape}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
