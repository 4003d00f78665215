"""What the input checks cost per store: `python bench/input_checks.py`.

Times the checks store_memory runs on its text before the write (validation, the secret
scan of every field, injection flags) on 64 KB values of several shapes, and the refusal
of oversized arguments (50,000 tags, 1 MB metadata). Prints median and p99 in ms of wall
time, and the median of CPU time, which is what the checks would take on an idle machine
when other processes share the cores."""

from __future__ import annotations

import base64
import random
import statistics
import string
import time
from collections.abc import Callable

from memory_mcp.checks import validation as v
from memory_mcp.checks.injection import content_flags
from memory_mcp.checks.safety import redact_field, redact_json, refuse_secret_names
from memory_mcp.errors import InvalidInputError

SIZE = 65_536
ROUNDS = 50


def value_shapes() -> dict[str, str]:
    rng = random.Random(7)
    return {
        "english prose": (
            "The deploy runs after the tests pass; rotate the token monthly. " * 2000
        )[:SIZE],
        "python code": (
            "def handler(event):\n    token = os.environ['TOKEN']  # a secret?\n"
            "    return {'ok': [1, 2, 3]}\n" * 1000
        )[:SIZE],
        "random printable": "".join(rng.choice(string.printable) for _ in range(SIZE)),
        "base64 blob": base64.b64encode(rng.randbytes(SIZE * 3 // 4)).decode()[:SIZE],
        "russian prose": ("Развёртывание идёт после тестов; пароль хранится в хранилище. " * 2000)[
            :SIZE
        ],
        "hex digests": (" ".join(f"{rng.getrandbits(256):064x}" for _ in range(1100)))[:SIZE],
    }


def store_checks(value: str) -> None:
    key = v.clean_key("bench-key")
    text = v.clean_value(value, SIZE)
    tags = v.clean_tags(["bench", "input"])
    metadata = v.clean_metadata({"source": "bench", "n": 1})
    refuse_secret_names(key, tags)
    redact_json(metadata, "metadata", [])
    text, _ = redact_field(text, "value")
    content_flags(key, text)


def refused(check: Callable[[], object]) -> None:
    try:
        check()
    except InvalidInputError:
        return
    raise AssertionError("expected a refusal")


def timed(job: Callable[[], object]) -> tuple[float, float, float]:
    wall, cpu = [], []
    for _ in range(ROUNDS):
        start, start_cpu = time.perf_counter(), time.thread_time()
        job()
        cpu.append((time.thread_time() - start_cpu) * 1000)
        wall.append((time.perf_counter() - start) * 1000)
    wall.sort()
    return statistics.median(wall), wall[int(len(wall) * 0.99) - 1], statistics.median(cpu)


def main() -> None:
    print(f"{'case':<30} {'wall median ms':>15} {'wall p99 ms':>12} {'cpu median ms':>14}")
    tags = [f"tag-{i}" for i in range(50_000)]
    big = {"blob": "x" * 1_000_000}
    cases: list[tuple[str, Callable[[], object]]] = [
        *(
            (f"64 KB {name}", lambda value=value: store_checks(value))
            for name, value in value_shapes().items()
        ),
        ("50,000 tags refused", lambda: refused(lambda: v.clean_tags(tags))),
        ("1 MB metadata refused", lambda: refused(lambda: v.clean_metadata(big))),
    ]
    for name, job in cases:
        median, p99, cpu = timed(job)
        print(f"{name:<30} {median:>15.3f} {p99:>12.3f} {cpu:>14.3f}")


if __name__ == "__main__":
    main()
