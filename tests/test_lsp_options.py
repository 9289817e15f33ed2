"""`initializationOptions`: structured by the options converter, strict on types, refusing unknown
options; over a raw pipe to the real server, a bad option is InvalidParams naming it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from rawlsp import LIVENESS, RawServer

from server.lsp.options import BadOption, InitializationOptions

INVALID_PARAMS = -32602

BAD_OPTIONS: dict[str, tuple[Any, list[str]]] = {
    "string false for a bool": ({"watch": "false"}, ["watch"]),
    "number for a bool": ({"polling": 0}, ["polling"]),
    "number for a path": ({"projectsDir": 5}, ["projectsDir"]),
    "empty path": ({"projectsDir": ""}, ["projectsDir"]),
    "lone surrogate in a path": ({"projectsDir": "/tmp/\ud800"}, ["projectsDir"]),
    "relative path": ({"projectsDir": "projects"}, ["projectsDir"]),
    "misspelt option": ({"projectDir": "/somewhere/else"}, ["projectDir"]),
    "unknown option": ({"colour": "blue"}, ["colour"]),
    "two at once": ({"watch": "yes", "pollling": True}, ["watch", "pollling"]),
    "not an object": (["watch"], []),
}


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", list(BAD_OPTIONS))
def test_bad_option_is_invalid_params_naming_it(case: str, corpus_projects: Path) -> None:
    """The server refuses `initialize` with -32602; the message and `data.options` name each option at
    fault, and the server does not go on to serve (or write into) any folder."""
    options, names = BAD_OPTIONS[case]
    before = _files(corpus_projects)
    with RawServer() as server:
        reply = server.call(
            "initialize",
            {"processId": None, "capabilities": {}, "initializationOptions": options},
            timeout=LIVENESS,
        )
        assert "result" not in reply, f"{case}: initialize was served: {reply}"
        error = reply["error"]
        print(f"{case}: {error['message']}")
        assert error["code"] == INVALID_PARAMS, error
        assert error["data"]["reason"] == "invalid-argument", error
        assert error["data"]["options"] == names, error
        for name in names:
            assert repr(name) in error["message"], error
        if not names:
            assert "initializationOptions must be an object" in error["message"], error
    assert _files(corpus_projects) == before


def test_a_misspelt_option_suggests_the_right_one() -> None:
    with pytest.raises(BadOption) as info:
        InitializationOptions.parse({"projectDir": "/x", "watch": True})
    assert "did you mean 'projectsDir'?" in str(info.value)
    assert info.value.options == ["projectDir"]


@dataclass(frozen=True)
class WithStores(InitializationOptions):
    """What adding an option takes: one field with a default (here the PostgreSQL stores)."""

    stores: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class WithStoresTuple(InitializationOptions):
    stores: tuple[str, ...] = ()


def test_an_array_option_may_be_a_tuple_field() -> None:
    assert WithStoresTuple.parse({"stores": ["postgresql://a/db"]}).stores == ("postgresql://a/db",)
    with pytest.raises(BadOption) as info:
        WithStoresTuple.parse({"stores": "postgresql://a/db"})
    assert "'stores' must be an array, got \"postgresql://a/db\" (a string)" in str(info.value)


def test_a_new_field_is_an_option_with_the_same_checks() -> None:
    """A field added to the dataclass is read under its camelCase name, over the command line's
    defaults, with the strict checks of its type (an array of strings, not a string)."""
    defaults = WithStores(projects_dir=Path("/from/the/command/line"), polling=True)
    parsed = WithStores.parse({"stores": ["postgresql://a/db", "postgresql://b/db"], "watch": False}, defaults=defaults)
    assert parsed == WithStores(
        projects_dir=Path("/from/the/command/line"),
        watch=False,
        polling=True,
        stores=["postgresql://a/db", "postgresql://b/db"],
    )
    for bad, problem in [
        ("postgresql://a/db", "'stores' must be an array"),
        (["postgresql://a/db", 7], "'stores' item 1 must be a string, got 7"),
    ]:
        with pytest.raises(BadOption) as info:
            WithStores.parse({"stores": bad})
        assert problem in str(info.value)
        assert info.value.options == ["stores"]
