"""SQLite's KeywordIndex (store/keyword.py): FTS5, BM25 over what the caller may see, with a
bound on its cost.

Statistics that leak nothing (no agent may learn of another's private memories through a
score). FTS5's own bm25() weighs a word by how many of
ALL memories hold it, and a memory's length against ALL memories' average: one private
memory of another agent holding a rare word moved a search's `explain.bm25` (6.6027 →
5.9146), and the order of results with it. So FTS5 only finds where each term is; the
score is computed here with FTS5's formula (k1 1.2, b 0.75, the column weights, a
memory's own words and its context as separate phrases, each with its own IDF) over the
caller's statistics population: the swarm's memories and the caller's own, in any scope,
expired or not, in the projects the search covers (`Population.sql`): a project's search
ranks as if its memories and `*`'s were alone in the store. Its size and total length are
counters that triggers keep per owner and project (`keyword_totals`, store/schema.py). No
number, no choice of terms and no order depends on what another agent keeps to itself: a
search reports the same whatever other agents' private memories hold. What it still takes
is time: a word common in others' private memories costs that many index entries to pass
over. Other projects' entries FTS5 passes over itself: each memory's project is a token
of the index (store/schema.py), and a search's MATCH asks for its projects' tokens too.

Where it differs from FTS5's bm25(): length is in characters, not tokens (the counters
are kept by SQL triggers, which cannot run the tokenizer); a phrase of several tokens
counts once per column; and a phrase in more than half of the population, whose IDF is
FTS5's floor (1e-6), is not scored: it weighs nothing, and reading every memory of a
speaker's name cost more than the rest of the search. The memories holding only such
phrases follow the others, newest first, scored 0 (FTS5 gave them ~1e-6, which the
ranking scales to 0 beside any other match and to 1 when nothing else matches, as 0
is). Measured on the LoCoMo dev split: docs/RETRIEVAL.md, "Keyword statistics that leak
nothing".

The cost bound: FTS5 finds every memory that holds any query term, about a microsecond
each: a word found in most of 100k memories costs ~100 ms, while a selective query costs
well under one. So the query's terms are counted first (one statement, each count
stopping past the budget), and in a population larger than `MATCH_BUDGET` only the rarest
terms that together match at most `MATCH_BUDGET` of its memories are ranked
(`keyword.affordable_terms`). When even the rarest term matches more than the budget, its
BM25 says little (a word in a fifth of all memories weighs 1.4, in half of them nothing):
the newest matching memories are returned, unranked, and the vector arm ranks them by
meaning.

The statements are SQL text run on the connection's own cursor (store/sqlite/cursor.py),
the caller's visibility as SQL text (store/visibility.py, visible_sql): through SQLAlchemy's
statement building the Python around them cost ~1.4 ms a search, where SQLite's own work
is 0.25-2.4 ms."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_mcp.models import Scope, Visibility
from memory_mcp.store.keyword import MATCH_BUDGET, OWN_COLUMNS, affordable_terms
from memory_mcp.store.sqlite.cursor import cursor_rows
from memory_mcp.store.sqlite.match import FTS_TOKENIZE, match_any, phrase, project_token
from memory_mcp.store.visibility import VisibleSql, visible_sql

if TYPE_CHECKING:  # SQLAlchemy's, or the standard library's (the hooks: stdlib_reads.py)
    from memory_mcp.store.sqlite.cursor import SqlConnection

# FTS5's BM25 constants (fts5_aux.c), and its floor for a term in over half the memories.
K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
# The index's columns, in order: the first three are a memory's own words, the last its
# context (store/write_context.py), ranked as a phrase of its own: FTS5 gives each phrase
# its own IDF, so the words a memory lends to the next ones in its session do not make
# them look common (in a store of 8 memories, one word lent to four neighbours had an IDF
# of ~0).
COLUMNS = ("key", "value", "tags", "context")
CONTEXT = 3
# The two phrases a term makes, as FTS5 column filters: a memory's own words, its context.
_PARTS = ("{key value tags}", "{context}")
# Every column of a memory's words (not its project's token).
_WORDS = "{" + " ".join(COLUMNS) + "}"

# A query word with `_` is looked up whole in the identifiers' index (store/schema.py):
# there `gcloud_alpha_compute` is one token, in the main index a phrase of three common
# ones whose position lists FTS5 walks (the 1M bench store: a count 12.5 ms p50 against
# 0.18 ms here, and a search makes up to 7 lookups per identifier). It holds no project
# token: its few matches are checked against `memories`.
IDENTIFIERS = "memory_identifiers"


def _index(term: str) -> str:
    """The keyword index `term` is looked up in."""
    return IDENTIFIERS if "_" in term else "memories_fts"


def _matching(table: str) -> str:
    return f"FROM memories JOIN {table} ON {table}.rowid = memories.id"


# Whose memories a caller's statistics count: the swarm's, and its own (in the projects
# of the search: Population.of).
_OWNERS = "(memories.scope = :pop_swarm OR memories.agent_id = :pop_agent)"
_LENGTH = (
    "length(memories.key) + length(memories.value) + length(memories.tags)"
    " + coalesce(length(memories.context), 0)"
)


@dataclass(frozen=True)
class Population:
    """The memories a caller's statistics count: how many, their total length, the
    condition that picks them (`sql`, on `memories`) and its parameters; and the index's
    own filter for the search's projects (`projects`, an FTS5 expression, "" for none:
    `filtered`), whether that filter alone picks exactly these memories (`indexed`: no
    other agent keeps private memories in those projects, so counting needs no look at
    `memories`) and whether they are a small part of the store (`few`: `_holders`)."""

    memories: int
    chars: int
    sql: str
    params: dict[str, str]
    projects: str = ""
    indexed: bool = False
    few: bool = False

    @classmethod
    def of(cls, conn: SqlConnection, vis: Visibility) -> Population:
        """The swarm's and `vis`'s caller's own memories in the projects `vis` shows."""
        params = {"pop_swarm": Scope.SWARM.value, "pop_agent": vis.caller.agent_id}
        projects = vis.shown_projects
        sql, inside = _OWNERS, "1"
        if projects is not None:
            names = [f":pop_project_{i}" for i in range(len(projects))]
            params.update(
                {name[1:]: project for name, project in zip(names, sorted(projects), strict=True)}
            )
            sql = f"({_OWNERS} AND memories.project IN ({', '.join(names)}))"
            inside = f"project IN ({', '.join(names)})"
        counted = f"owner IN ('', :pop_agent) AND {inside}"
        (row,) = cursor_rows(
            conn,
            f"SELECT coalesce(sum(CASE WHEN {counted} THEN memories END), 0), "
            f"coalesce(sum(CASE WHEN {counted} THEN chars END), 0), "
            f"coalesce(sum(CASE WHEN {inside} THEN memories END), 0), "
            "coalesce(sum(memories), 0) FROM keyword_totals",
            params,
        )
        memories, chars, theirs, everyone = (int(value) for value in row)
        indexed = memories == theirs and projects != frozenset()
        if not projects or theirs == everyone:  # every memory is in them: no filter
            return cls(memories, chars, sql, params, indexed=indexed)
        tokens = " OR ".join(phrase(project_token(project)) for project in sorted(projects))
        # FTS5 reads a term's every entry to find the few in these projects when it is
        # asked for its places (fts5vocab), ~2 us each; highlight() counts them in just
        # these projects' memories, ~6.5 us each: cheaper below a third of the store.
        few = theirs * 3 < everyone
        return cls(memories, chars, sql, params, f"{{project}} : ({tokens})", indexed, few)

    def filtered(self, match: str, table: str = "memories_fts") -> str:
        """`match` (an FTS5 expression) within the search's projects: FTS5 passes over
        other projects' entries itself, not each one checked against `memories`. The
        identifiers' index has no project token: `match` as it is."""
        if self.projects and table == "memories_fts":
            return f"({match}) AND {self.projects}"
        return match

    def idf(self, holding: int) -> float:
        """FTS5's IDF of a phrase `holding` of these memories hold."""
        idf = math.log((self.memories - holding + 0.5) / (holding + 0.5))
        return idf if idf > 0 else MIN_IDF


def keyword_hits(
    conn: SqlConnection,
    terms: Sequence[str],
    vis: Visibility,
    limit: int,
    column_weights: tuple[float, float, float, float],
) -> tuple[list[tuple[int, float]], set[int]]:
    """(id, BM25 relevance, larger is better) of visible memories with any of `terms`, and
    those of them whose own words (key, value, tags) hold a term they were found by: the
    others were found by their context alone."""
    if not terms:
        return [], set()
    population = Population.of(conn, vis)
    holding = _counts(conn, terms, population)
    matches = {term: own + context for term, (own, context) in zip(terms, holding, strict=True)}
    present = [term for term in terms if matches[term] > 0]
    if not present:
        return [], set()
    chosen = present
    if population.memories > MATCH_BUDGET:
        chosen = affordable_terms(matches, MATCH_BUDGET)
        if not chosen:
            phrases = [(_WORDS, term) for term in present]
            newest = _newest_matching(conn, phrases, population, visible_sql(vis), limit)
            return newest, holding_terms(conn, present, [i for i, _ in newest], OWN_COLUMNS)
    # The IDF of each phrase: a term in a memory's own words (part 0), in its context (1).
    idf = {
        (i, part): population.idf(count)
        for i, term in enumerate(terms)
        if term in chosen
        for part, count in enumerate(holding[i])
        if count > 0
    }
    weighing = {part: weight for part, weight in idf.items() if weight > MIN_IDF}
    hits: list[tuple[int, float]] = []
    own: set[int] = set()
    if weighing:
        hits, own = _ranked(
            conn, terms, weighing, visible_sql(vis), population, limit, column_weights
        )
    # A phrase in over half of the population weighs MIN_IDF, nothing. Reading where it
    # is, for a score of ~0 (which the ranking scales to 0 beside any other match), cost
    # most of a search's time (a speaker's name in every other turn): the memories that
    # hold only such phrases come after the others, newest first, scored 0.
    weightless = [part for part, weight in idf.items() if weight <= MIN_IDF]
    if weightless and len(hits) < limit:
        phrases = [(_PARTS[part], terms[i]) for i, part in weightless]
        known = {memory_id for memory_id, _ in hits}
        more = _newest_matching(conn, phrases, population, visible_sql(vis), limit)
        more = [hit for hit in more if hit[0] not in known][: limit - len(hits)]
        hits += more
        own |= holding_terms(conn, chosen, [i for i, _ in more], OWN_COLUMNS)
    return hits, own


def coverage(
    conn: SqlConnection, terms: Sequence[str], vis: Visibility, memory_ids: Sequence[int]
) -> dict[int, float]:
    """How much of a query each of `memory_ids` holds, 0-1: the IDF-weighted share of
    `terms` found in its own words (key, value, tags), an IDF over the population of `vis`
    that stays positive however common a term is (Lucene's, log(1 + (N - n + 0.5) /
    (n + 0.5))), a term no memory holds weighing most. Unlike BM25 it does not depend on
    the size of the store: the prompt hook (app/reads.py) compares it with a threshold."""
    if not terms or not memory_ids:
        return {}
    population = Population.of(conn, vis)
    holding = _counts(conn, terms, population)
    everyone = population.memories
    weights = [
        math.log(1 + (everyone - min(own, everyone) + 0.5) / (min(own, everyone) + 0.5))
        for own, _ in holding
    ]
    total = sum(weights)
    shares = dict.fromkeys(memory_ids, 0.0)
    for term, weight in zip(terms, weights, strict=True):
        for memory_id in holding_terms(conn, [term], memory_ids, OWN_COLUMNS):
            shares[memory_id] += weight / total
    return shares


def _counts(
    conn: SqlConnection, terms: Sequence[str], population: Population
) -> list[tuple[int, int]]:
    """How many of the population's memories hold each term in their own words and in
    their context, each counted only up to MATCH_BUDGET + 1: one statement, no scores.
    Past the budget the exact number changes nothing (a term over it is never
    affordable), and counting stops there."""
    params: dict[str, object] = {**population.params, "cap": MATCH_BUDGET + 1}
    counts = []
    for i, term in enumerate(terms):
        table = _index(term)
        # Each memory FTS5 finds checked against `memories` cost ~6 us (a page read each
        # at 100k memories); the index alone answers when its filter picks the population.
        alone = population.indexed and (table == "memories_fts" or not population.projects)
        for name, columns in ((f"o{i}", "{key value tags}"), (f"x{i}", "{context}")):
            params[name] = population.filtered(f"{columns} : {phrase(term)}", table)
            matching = (
                f"FROM {table} WHERE {table} MATCH :{name}"
                if alone
                else f"{_matching(table)} WHERE {table} MATCH :{name} AND {population.sql}"
            )
            counts.append(f"(SELECT count(*) FROM (SELECT 1 {matching} LIMIT :cap))")
    (row,) = cursor_rows(conn, f"SELECT {', '.join(counts)}", params)
    return [(int(row[2 * i]), int(row[2 * i + 1])) for i in range(len(terms))]


def _ranked(
    conn: SqlConnection,
    terms: Sequence[str],
    idf: dict[tuple[int, int], float],
    visible: VisibleSql,
    population: Population,
    limit: int,
    column_weights: tuple[float, float, float, float],
) -> tuple[list[tuple[int, float]], set[int]]:
    """The best `limit` visible memories by BM25 over the population (module docstring),
    and those of them whose own words hold a phrase (the rest hold it in their context),
    for the phrases of `idf` ((term index, 0 its own words or 1 its context) -> IDF).
    One statement lists the population's memories holding each phrase, in which column,
    how often, whether the caller sees them (filters included) and their length
    (`_holders`)."""
    # Summed in one order (memory, term, column) whichever way the places were read, so
    # a project's scores are its scores alone in a store to the last bit.
    hits = sorted(_holders(conn, terms, idf, visible, population))
    lengths = {memory_id: length for memory_id, _, _, _, seen, length in hits if seen}
    # FTS5's BM25 (fts5_aux.c): per phrase, the sum over its columns of weight × count,
    # saturated and normed by length.
    weights: dict[tuple[int, int, int], float] = defaultdict(float)
    for memory_id, term, column, count, _, _ in hits:
        if memory_id in lengths:
            weights[(memory_id, term, int(column == CONTEXT))] += column_weights[column] * count
    average = max(population.chars / population.memories if population.memories else 1.0, 1.0)
    scores: dict[int, float] = defaultdict(float)
    for (memory_id, term, part), weight in weights.items():
        norm = K1 * (1 - B + B * lengths[memory_id] / average)
        scores[memory_id] += idf[(term, part)] * weight * (K1 + 1) / (weight + norm)
    best = sorted(scores.items(), key=lambda hit: (-hit[1], -hit[0]))[:limit]
    chosen = {memory_id for memory_id, _ in best}
    own = {memory_id for memory_id, _, part in weights if part == 0 and memory_id in chosen}
    return best, own


def _holders(
    conn: SqlConnection,
    terms: Sequence[str],
    idf: dict[tuple[int, int], float],
    visible: VisibleSql,
    population: Population,
) -> list[tuple[int, int, int, int, int, int]]:
    """(memory id, term index, column index, count, whether the caller sees it, its
    length) for every column of a population's memory that holds a phrase of `idf`. A
    term of one token is read from the index's own entries (fts5vocab's `instance`
    table: each place a token is, so the count is exact), or, when the search's projects
    are a small part of the store, counted by highlight() in the memories a MATCH within
    those projects finds (the instance table has every project's places); a phrase of
    several (`api.v2/users`) or an identifier (`user_id`, in the identifiers' index) by a
    MATCH per column, counted once. Each place's memory is read for the population's
    condition anyway: its visibility and length come with it (a read of them by id
    afterwards cost ~7 ms of 2,000 hits at 100k memories).
    The tokens are the index's own: the terms are put through its tokenizer (`_tokens`)."""
    params: dict[str, object] = {**population.params, **visible.params}
    memory = f"({visible.sql}), {_LENGTH}"
    parts = []
    for i, tokens in enumerate(_tokens(conn, terms)):
        columns = [c for c in range(len(COLUMNS)) if (i, int(c == CONTEXT)) in idf]
        if not columns:
            continue
        table = _index(terms[i])
        if len(tokens) == 1 and not population.few and table == "memories_fts":
            params[f"k{i}"] = tokens[0]
            names = ", ".join(f"'{COLUMNS[c]}'" for c in columns)
            parts.append(
                f"SELECT memories.id, {i}, {_COLUMN_INDEX}, count(*), {memory} "
                "FROM temp.memory_places AS places JOIN memories ON memories.id = places.doc "
                f"WHERE places.term = :k{i} AND places.col IN ({names}) AND {population.sql} "
                "GROUP BY places.doc, places.col"
            )
            continue
        for c in columns:
            params[f"m{i}_{c}"] = population.filtered(
                f"{{{COLUMNS[c]}}} : {phrase(terms[i])}", table
            )
            # A token's places in the column: highlight() marks each, so the text grows
            # by one character a place. A phrase of several tokens counts once.
            count = (
                f"length(highlight(memories_fts, {c}, '#', '')) - length(memories.\"{COLUMNS[c]}\")"
                if len(tokens) == 1 and table == "memories_fts"
                else "1"
            )
            parts.append(
                f"SELECT memories.id, {i}, {c}, {count}, {memory} {_matching(table)} "
                f"WHERE {table} MATCH :m{i}_{c} AND {population.sql}"
            )
    if not parts:
        return []
    return cursor_rows(conn, " UNION ALL ".join(parts), params)


# fts5vocab names a place's column; the ranking counts them by index.
_COLUMN_INDEX = (
    "CASE places.col "
    + " ".join(f"WHEN '{column}' THEN {c}" for c, column in enumerate(COLUMNS))
    + " END"
)
# Per connection: where each token of the index is (memory, column, position), and a
# scratch index that puts a search's terms through the keyword index's tokenizer.
_QUERY_TABLES = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_places "
    "USING fts5vocab(main, memories_fts, instance)",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_words USING fts5(words, "
    f"tokenize='{FTS_TOKENIZE}')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_tokens "
    "USING fts5vocab(temp, query_words, instance)",
)


def _tokens(conn: SqlConnection, terms: Sequence[str]) -> list[list[str]]:
    """Each term as the keyword index holds it: lower-cased, without diacritics, stemmed
    ("running" → "run"), split where the tokenizer splits ("api.v2" → "api", "v2")."""
    for ddl in _QUERY_TABLES:
        cursor_rows(conn, ddl, {})
    cursor_rows(conn, "DELETE FROM temp.query_words", {})
    values = ", ".join(f"({i + 1}, :w{i})" for i in range(len(terms)))
    words = {f"w{i}": term for i, term in enumerate(terms)}
    cursor_rows(conn, f"INSERT INTO temp.query_words(rowid, words) VALUES {values}", words)
    tokens: list[list[str]] = [[] for _ in terms]
    for doc, token in cursor_rows(
        conn, "SELECT doc, term FROM temp.query_tokens ORDER BY doc, offset", {}
    ):
        tokens[doc - 1].append(token)
    return tokens


def _newest_matching(
    conn: SqlConnection,
    phrases: Sequence[tuple[str, str]],
    population: Population,
    visible: VisibleSql,
    limit: int,
) -> list[tuple[int, float]]:
    """The newest visible memories holding any of `phrases` ((column filter, term)),
    scored 0: one statement per index the terms are in."""
    newest: set[int] = set()
    for table in {_index(term) for _, term in phrases}:
        match = " OR ".join(f"{cols} : {phrase(t)}" for cols, t in phrases if _index(t) == table)
        newest.update(
            _visible_matches(
                conn,
                population.filtered(match, table),
                visible,
                limit,
                f"ORDER BY {table}.rowid DESC",
                table,
            )
        )
    return [(memory_id, 0.0) for memory_id in sorted(newest, reverse=True)[:limit]]


def holding_phrase(conn: SqlConnection, words: str, vis: Visibility, limit: int) -> list[int]:
    """Visible memories holding `words` as a phrase (`gen-0042`: "gen" then "0042"), in no
    order. No BM25 and no cost guard: the phrase's rarest word keeps it cheap even when
    its other words are in every memory, and an identifier with `_` is one token of the
    identifiers' index (`user_id`: "user_id", not "user" then "id")."""
    # A memory's own words only: an identifier in its context (store/write_context.py) is
    # one a memory of its window holds, and counting it would make it look common.
    table = _index(words)
    match = Population.of(conn, vis).filtered(f"{{key value tags}} : {phrase(words)}", table)
    return _visible_matches(conn, match, visible_sql(vis), limit, table=table)


def _visible_matches(
    conn: SqlConnection,
    match: str,
    visible: VisibleSql,
    limit: int,
    order: str = "",
    table: str = "memories_fts",
) -> list[int]:
    rows = cursor_rows(
        conn,
        f"SELECT memories.id {_matching(table)} WHERE {table} MATCH :match "
        f"AND ({visible.sql}) {order} LIMIT :limit",
        {**visible.params, "match": match, "limit": limit},
    )
    return [row[0] for row in rows]


def holding_terms(
    conn: SqlConnection, terms: Sequence[str], memory_ids: Sequence[int], columns: Sequence[str]
) -> set[int]:
    """Of `memory_ids`, those whose `columns` (of key, value, tags) hold any of `terms`,
    matched as the keyword arm matches them: a memory's own words, as opposed to its
    context's (search's `matched_by`), or a neighbour's value (what it lent). The index
    is read between the lowest and the highest id: the ids are a search's newest or best
    few, or neighbours, close together. Asked for each id (`rowid IN`), FTS5 sought every
    term's entries in every segment once per id: ~1 ms an id for common words at 100k
    memories, where the range took 0.3-4 ms for 50 ids."""
    if not terms or not memory_ids:
        return set()
    wanted = set(memory_ids)
    found: set[int] = set()
    for table in {_index(term) for term in terms}:
        match = f"{{{' '.join(columns)}}} : ({match_any([t for t in terms if _index(t) == table])})"
        rows = cursor_rows(
            conn,
            f"SELECT rowid FROM {table} WHERE {table} MATCH :match "
            "AND rowid >= :low AND rowid <= :high",
            {"match": match, "low": min(memory_ids), "high": max(memory_ids)},
        )
        found.update(row[0] for row in rows if row[0] in wanted)
    return found


def keyed(conn: SqlConnection, key: str, vis: Visibility, limit: int) -> list[int]:
    """Visible memories whose key is `key`, ignoring case."""
    visible = visible_sql(vis)
    rows = cursor_rows(
        conn,
        f'SELECT memories.id FROM memories WHERE lower(memories."key") = lower(:key) '
        f"AND ({visible.sql}) LIMIT :limit",
        {**visible.params, "key": key, "limit": limit},
    )
    return [row[0] for row in rows]
