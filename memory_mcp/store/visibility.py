"""The visibility rule and a query's filters as one SQL condition on the table `memories`,
written once, as SQL text with named parameters (all `vis_…`): who may see what (scope,
owner, session), the projects a read covers (models.Visibility.shown_projects: the
current project and `*` by default, within the caller's grants), task memories (none
unless a task is named, every task's for a read by id; archived ones of every task when
asked for), archived ones, expiry, corrected ones and what held at a time
(rules/validity.py), tags, source and the time window.

Every read that filters by who may see what applies this text: SQLAlchemy's statements
(rows.visible_to binds it into any statement, on SQLite and PostgreSQL alike), the search's
SQL text on SQLite's cursor (rows.visible_sql) and the reads on the standard library's
sqlite3 (store/sqlite/stdlib_reads.py: the hooks and the reading commands, which import no
SQLAlchemy). A filter added here is applied by all of them. Standard library only: the
hooks' fast path imports it. rules/permissions.py's `can_see` is the same rule for one
record already read."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

from memory_mcp.models import Scope, Visibility


@dataclass(frozen=True)
class VisibilityShape:
    """What the SQL of a visibility condition depends on; the values are its parameters."""

    scope: Scope | None
    include_expired: bool
    source: bool
    updated_since: bool
    updated_until: bool
    tags: int  # distinct tags asked for
    projects: int | None  # projects shown (None: every project)
    task: bool | None  # task memories: of one task too (True), of none (False), any (None)
    include_archived: bool
    include_superseded: bool
    as_of: bool


def shape_and_values(vis: Visibility) -> tuple[VisibilityShape, dict[str, Any]]:
    caller = vis.caller
    values: dict[str, Any] = {
        "vis_agent": caller.agent_id,
        "vis_session": caller.session_id,
        "vis_now": vis.now,
        "vis_swarm_scope": Scope.SWARM.value,
        "vis_agent_scope": Scope.AGENT.value,
        "vis_session_scope": Scope.SESSION.value,
    }
    if vis.source:
        values["vis_source"] = vis.source.value
    if vis.updated_since is not None:
        values["vis_since"] = vis.updated_since
    if vis.updated_until is not None:
        values["vis_until"] = vis.updated_until
    if vis.as_of is not None:
        values["vis_as_of"] = vis.as_of
    tags = sorted(set(vis.tags))
    for i, tag in enumerate(tags):
        values[f"vis_tag_{i}"] = tag
    if tags:
        values["vis_tag_count"] = len(tags)
    projects = vis.shown_projects
    for i, project in enumerate(sorted(projects or ())):
        values[f"vis_project_{i}"] = project
    if vis.task is not None and not vis.every_task:
        values["vis_task"] = vis.task
    shape = VisibilityShape(
        vis.scope,
        vis.include_expired,
        bool(vis.source),
        vis.updated_since is not None,
        vis.updated_until is not None,
        len(tags),
        None if projects is None else len(projects),
        None if vis.every_task else vis.task is not None,
        vis.include_archived,
        vis.include_superseded,
        vis.as_of is not None,
    )
    return shape, values


_BY_SCOPE = {
    Scope.SWARM: "memories.scope = :vis_swarm_scope",
    Scope.AGENT: "memories.scope = :vis_agent_scope AND memories.agent_id = :vis_agent",
    Scope.SESSION: "memories.scope = :vis_session_scope AND memories.agent_id = :vis_agent "
    "AND memories.session_id = :vis_session",
}


@cache  # one per scope, filter set and number of tags asked for: a bounded few
def condition_sql(shape: VisibilityShape) -> str:
    """The condition, in parentheses (it is combined with other conditions as it is)."""
    scopes = [_BY_SCOPE[shape.scope]] if shape.scope else list(_BY_SCOPE.values())
    conditions = ["(" + " OR ".join(f"({one})" for one in scopes) + ")"]
    # As of a time (rules/validity.py): what held then, expired, archived or corrected
    # since or not; else what holds now.
    at = ":vis_as_of" if shape.as_of else ":vis_now"
    if not shape.include_expired:
        conditions.append(f"(memories.expires_at IS NULL OR memories.expires_at > {at})")
    if shape.as_of:
        conditions.append(
            "coalesce(memories.valid_from, memories.created_at) <= :vis_as_of "
            "AND (memories.valid_to IS NULL OR memories.valid_to > :vis_as_of)"
        )
    elif not shape.include_superseded:
        conditions.append("(memories.valid_to IS NULL OR memories.valid_to > :vis_now)")
    if shape.source:
        conditions.append("memories.source = :vis_source")
    if shape.updated_since:
        conditions.append("memories.updated_at >= :vis_since")
    if shape.updated_until:
        conditions.append("memories.updated_at <= :vis_until")
    if shape.projects is not None:  # none shown: nothing passes (PostgreSQL has no `IN ()`)
        names = ", ".join(f":vis_project_{i}" for i in range(shape.projects))
        conditions.append(f"memories.project IN ({names})" if names else "1 = 0")
    # Archived task memories (completed tasks') are asked for by include_archived alone,
    # whichever task they were of: nothing else lists a completed task's memories.
    archived = " OR memories.archived_at IS NOT NULL" if shape.include_archived else ""
    if shape.task is False:
        conditions.append(f"(memories.task IS NULL{archived})")
    elif shape.task:
        conditions.append(f"(memories.task IS NULL OR memories.task = :vis_task{archived})")
    if not shape.include_archived:
        conditions.append("memories.archived_at IS NULL")
    # Held for approval (rules/quarantine.py): served to no one, by no read.
    conditions.append("NOT memories.quarantined")
    if shape.tags:
        tags = ", ".join(f":vis_tag_{i}" for i in range(shape.tags))
        conditions.append(
            "memories.id IN (SELECT memory_tags.memory_id FROM memory_tags "
            f"WHERE memory_tags.tag IN ({tags}) GROUP BY memory_tags.memory_id "
            "HAVING count(*) = :vis_tag_count)"
        )
    return "(" + " AND ".join(conditions) + ")"


@cache
def condition_parameters(shape: VisibilityShape) -> frozenset[str]:
    """The parameters condition_sql(shape) names (shape_and_values gives more)."""
    return frozenset(re.findall(r":(vis_\w+)", condition_sql(shape)))


class VisibleSql(NamedTuple):
    """The condition as SQL text on the table `memories`, and its parameters."""

    sql: str
    params: dict[str, Any]


def visible_sql(vis: Visibility) -> VisibleSql:
    shape, values = shape_and_values(vis)
    return VisibleSql(condition_sql(shape), values)


__all__ = [
    "VisibilityShape",
    "VisibleSql",
    "condition_parameters",
    "condition_sql",
    "shape_and_values",
    "visible_sql",
]
