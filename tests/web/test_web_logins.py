"""The web view's login table (memory_mcp/web/logins.py) on its own: expiry and the
per-token limit, with a clock the test moves. Over HTTP: tests/web/test_web.py."""

from __future__ import annotations

from memory_mcp.web.logins import LOGIN_SECONDS, MAX_LOGINS_PER_TOKEN, WebLogins


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_login_stands_for_its_token_until_it_expires() -> None:
    clock = Clock()
    logins = WebLogins(clock)
    login_id = logins.start("hash-a")
    assert logins.token_hash_of(login_id) == "hash-a"
    clock.now += LOGIN_SECONDS - 1
    assert logins.token_hash_of(login_id) == "hash-a"
    clock.now += 1
    assert logins.token_hash_of(login_id) is None
    assert len(logins) == 0, "an expired login is forgotten"


def test_ending_a_login_forgets_it() -> None:
    logins = WebLogins(Clock())
    first, second = logins.start("hash-a"), logins.start("hash-a")
    logins.end(first)
    assert logins.token_hash_of(first) is None
    assert logins.token_hash_of(second) == "hash-a"


def test_logging_in_again_and_again_drops_only_that_tokens_oldest() -> None:
    logins = WebLogins(Clock())
    other = logins.start("hash-b")
    mine = [logins.start("hash-a") for _ in range(MAX_LOGINS_PER_TOKEN + 5)]
    assert [logins.token_hash_of(i) for i in mine[:5]] == [None] * 5
    assert all(logins.token_hash_of(i) == "hash-a" for i in mine[5:])
    assert logins.token_hash_of(other) == "hash-b"
    assert len(logins) == MAX_LOGINS_PER_TOKEN + 1


def test_expired_logins_are_swept_when_someone_logs_in() -> None:
    clock = Clock()
    logins = WebLogins(clock)
    for n in range(50):
        logins.start(f"hash-{n}")
    clock.now += LOGIN_SECONDS
    logins.start("hash-new")
    assert len(logins) == 1
