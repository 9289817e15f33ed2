"""`usage`: tokens and cost of the sessions under a projects folder, grouped by session, project, model or day."""

from __future__ import annotations

import argparse
from typing import Any

from server.commands.common import add_projects_dir, print_json, projects_dir
from storage.paths import candidate_project_dirs, resolve_cwd
from storage.prices import PRICES_DATE, PRICES_SOURCE
from storage.terminaltext import one_line
from storage.usage import GROUPINGS, Response, Usage, folder_responses, grouped, total
from storage.usagecache import UsageCache


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("usage", help="tokens and cost, by session, project, model or day")
    add_projects_dir(p)
    p.add_argument("--cwd", help="only the sessions of this working directory")
    p.add_argument("--by", choices=GROUPINGS, default="session", help="grouping (default: session)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_usage)


def _responses(args: argparse.Namespace) -> list[Response]:
    root = projects_dir(args)
    dirs = candidate_project_dirs(root, resolve_cwd(args.cwd)) if args.cwd else None
    cache = UsageCache()
    responses = folder_responses(root, dirs, cache)
    cache.save()
    return responses


def usage_report(responses: list[Response], by: str) -> dict[str, Any]:
    """Each response once; a response a fork copy holds again counts for the session that made it."""
    groups = grouped(responses, by)
    return {
        "by": by,
        "groups": [{"key": key, **u.to_report_json()} for key, u in groups.items()],
        "total": total(responses).to_report_json(),
        "prices": {"date": PRICES_DATE, "source": PRICES_SOURCE},
    }


def _cost(u: Usage) -> str:
    if u.cost_usd is not None:
        return f"${u.cost_usd:.4f}"
    if u.priced_cost_usd:
        return f">${u.priced_cost_usd:.4f}*"
    return "?*"


def cmd_usage(args: argparse.Namespace) -> int:
    responses = _responses(args)
    if args.json:
        print_json(usage_report(responses, args.by))
        return 0
    groups = grouped(responses, args.by)
    rows = [*((one_line(k), u) for k, u in groups.items()), ("TOTAL", total(responses))]
    width = max([len(args.by.upper()), 5, *(len(k) for k, _ in rows)])
    print(f"{args.by.upper():{width}}  {'INPUT':>11}  {'OUTPUT':>10}  {'CACHE W':>11}  {'CACHE R':>12}  {'COST':>11}")
    for key, u in rows:
        print(
            f"{key:{width}}  {u.input_tokens:>11,}  {u.output_tokens:>10,}  {u.cache_creation_tokens:>11,}  "
            f"{u.cache_read_tokens:>12,}  {_cost(u):>11}"
        )
    unpriced = total(responses).unpriced_models
    if unpriced:
        print(f"* no price known for: {', '.join(one_line(m) for m in sorted(unpriced))} (cost shown without them)")
    print(f"prices of {PRICES_DATE}: {PRICES_SOURCE}")
    return 0
