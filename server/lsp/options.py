"""The server's `initializationOptions`, structured once into a typed object by a cattrs converter.

Each field of `InitializationOptions` is the option of the same name in camelCase (`projects_dir` is
`projectsDir`); adding an option is adding a field with a default. The converter is strict where cattrs
is lenient: a bool must be `true`/`false` (not `"false"`), a string a string, a list a list. An option
the server does not know is refused, naming it: a misspelt `projectsDir` must not quietly serve (and
write into) another projects folder. An option given as `null` counts as not given.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Self, get_args, get_origin

import cattrs
from cattrs.gen import make_dict_structure_fn, override

from storage.errors import InvalidArgument
from storage.store_source import StoreSource, parse_stores


@dataclass(frozen=True)
class InitializationOptions:
    """One field per option, each with a default (e.g. `stores: tuple[str, ...] = ()` is `"stores": [...]`)."""

    projects_dir: Path | None = None
    """`projectsDir`: the projects folder to serve (default: the command line's, else the CLI's)."""
    watch: bool = True
    """`watch`: follow changes to the folder live."""
    polling: bool = False
    """`polling`: poll instead of OS events (network drives)."""
    stores: tuple[StoreSource, ...] = ()
    """`stores`: session stores (postgresql:// URLs, or `{url, schema}`) mirrored read-only beside the folder."""

    def root(self) -> Path:
        """The projects folder served, absolute and `~` expanded: the option's, else the CLI's own."""
        from storage.paths import default_projects_dir

        return Path(os.path.abspath((self.projects_dir or default_projects_dir()).expanduser()))

    @classmethod
    def parse(cls, raw: Any, *, defaults: Self | None = None) -> Self:
        """From the client's JSON (None or an object): the options it gives, over `defaults`.

        A wrong or unknown option raises `BadOption` naming every option at fault."""
        base = defaults if defaults is not None else cls()
        if raw is None:
            return base
        if not isinstance(raw, dict):
            raise BadOption(f"initializationOptions must be an object, got {_shown(raw)}", [])
        given = {key: value for key, value in raw.items() if value is not None}
        try:
            parsed = options_converter.structure(given, cls)
        except cattrs.ClassValidationError as exc:
            raise _bad_option(exc, cls) from exc
        chosen = {f.name: getattr(parsed, f.name) for f in fields(base) if camel_case(f.name) in given}
        return replace(base, **chosen)


class BadOption(InvalidArgument):
    """An `initializationOptions` entry of the wrong type, or one the server does not know."""

    def __init__(self, message: str, options: list[str]) -> None:
        super().__init__(message)
        self.options = options

    def details(self) -> dict[str, Any]:
        return {"options": self.options}


def camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _shown(value: Any) -> str:
    """A wrong value as the client sent it, with its JSON type."""
    kind = {
        type(None): "null",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
    }
    text = json.dumps(value, default=str)
    return f"{text[:60]} ({kind.get(type(value), 'an object')})"


def _strict_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"must be true or false, got {_shown(value)}")
    return value


def _strict_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise TypeError(f"must be a string, got {_shown(value)}")
    return value


def _path(value: Any, _: type) -> Path:
    if not isinstance(value, str) or not value or "\x00" in value:
        raise TypeError(f"must be a non-empty path string, got {_shown(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise TypeError(f"must be a path in valid Unicode, got {_shown(value)}") from exc
    path = Path(value).expanduser()
    if not path.is_absolute():
        # the server's working directory is the editor's business, not the user's: say where
        raise TypeError(f"must be an absolute path (or start with ~), got {_shown(value)}")
    return path


def _is_array(kind: Any) -> bool:
    """`list[X]` or `tuple[X, ...]`: a JSON array of X."""
    args = get_args(kind)
    return get_origin(kind) is list or (get_origin(kind) is tuple and len(args) == 2 and args[1] is Ellipsis)


def _array_hook(kind: Any) -> Any:
    item = get_args(kind)[0]
    build = list if get_origin(kind) is list else tuple

    def structure(value: Any, _: type) -> Any:
        if not isinstance(value, list):
            raise TypeError(f"must be an array, got {_shown(value)}")
        out = []
        for i, element in enumerate(value):
            try:
                out.append(options_converter.structure(element, item))
            except (TypeError, ValueError) as exc:
                raise TypeError(f"item {i} {exc}") from exc
        return build(out)

    return structure


def _dataclass_hook(cls: type[Any]) -> Any:
    renames = {f.name: override(rename=camel_case(f.name)) for f in fields(cls)}
    # typed as Callable[..., Any]: mypy cannot match a **dict of overrides against the `_cattrs_*` flags
    structure_fn: Callable[..., Any] = make_dict_structure_fn
    return structure_fn(cls, options_converter, **renames)


options_converter = cattrs.Converter(forbid_extra_keys=True)
"""Our own converter (lsprotocol's, which pygls uses for the protocol, must stay lenient as it is)."""
options_converter.register_structure_hook(bool, _strict_bool)
options_converter.register_structure_hook(str, _strict_str)
options_converter.register_structure_hook(Path, _path)
options_converter.register_structure_hook_factory(_is_array, _array_hook)
options_converter.register_structure_hook_factory(is_dataclass, _dataclass_hook)
options_converter.register_structure_hook_func(
    lambda kind: kind == tuple[StoreSource, ...], lambda value, _: parse_stores(value)
)


def _bad_option(exc: cattrs.ClassValidationError, cls: type[Any]) -> BadOption:
    """One message naming each option at fault, from what cattrs collected."""
    known = [camel_case(f.name) for f in fields(cls)]
    problems: list[str] = []
    names: list[str] = []
    with_notes, others = exc.group_exceptions()
    for sub, note in with_notes:
        name = camel_case(note.name)
        names.append(name)
        # our own parsers (e.g. `parse_stores`) name the option themselves
        problems.append(str(sub) if isinstance(sub, InvalidArgument) else f"initialization option {name!r} {sub}")
    for sub in others:
        for name in sorted(getattr(sub, "extra_fields", ())):
            names.append(name)
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            problems.append(f"unknown initialization option {name!r} ({hint}known: {', '.join(known)})")
        if not getattr(sub, "extra_fields", None):
            problems.append(f"initializationOptions: {sub}")
    return BadOption("; ".join(problems), names)
