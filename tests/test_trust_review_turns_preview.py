"""The permission prompt shows what will run, also when a model's tool input is made to read as something else.

The preview (`server.agent.permissions.preview`) writes out control and format characters, counts long runs of
spaces and of blank lines: a harmless start of a command could otherwise be all one reads. Two ways round it, found
here (the real server over stdio, the scripted model, the test client answering as an editor):

- Characters that are drawn as blanks but are neither spaces nor controls: U+2800 BRAILLE PATTERN BLANK (a symbol),
  U+3164 HANGUL FILLER and U+FFA0 (letters), and the invisible marks (U+034F, variation selectors). A run of them
  pushed `; touch pwned` out of sight as forty spaces did before, and lines of them pushed the rest of a command
  below the dialog's first view, as blank lines did; bash takes them as part of a word, so what follows runs.
- A Write's `file_path` holding newlines: shown as it was, its lines read as the diff's, so the prompt for a write
  of `.git/hooks/pre-commit` read `write notes.md:` with a line of content after it. A path is one line.
"""

from __future__ import annotations

from pathlib import Path

from pytest_lsp import LanguageClient
from test_permissions import client, turn, work  # noqa: F401 - the real server and its answering client

BLANKS = "\u2800\u3164\uffa0\u034f\ufe0f"


async def test_characters_drawn_as_blanks_are_written_out(client: LanguageClient, work: dict[str, Path]) -> None:  # noqa: F811
    client.answers[:] = ["deny"]  # type: ignore[attr-defined]
    command = "echo safe" + "\u2800" * 60 + "; touch pwned" + "\n\u3164" * 30 + "\ntouch pwned2"
    await turn(client, work, f"BASH {command}")
    shown = client.asked[0]["preview"]  # type: ignore[attr-defined]
    assert not any(ch in shown for ch in BLANKS), shown  # before: the sixty U+2800 and thirty U+3164 as they were
    assert "echo safe⟨U+2800⟩⟨U+2800⟩" in shown and "\n⟨U+3164⟩\n" in shown
    assert not (work["cwd"] / "pwned").exists()


async def test_each_blank_drawn_character_is_written_out(client: LanguageClient, work: dict[str, Path]) -> None:  # noqa: F811
    client.answers[:] = ["deny"]  # type: ignore[attr-defined]
    await turn(client, work, "BASH echo " + "x".join(BLANKS))
    shown = client.asked[0]["preview"]  # type: ignore[attr-defined]
    assert shown == "echo ⟨U+2800⟩x⟨U+3164⟩x⟨U+FFA0⟩x⟨U+034F⟩x⟨U+FE0F⟩", shown


async def test_a_write_path_is_shown_on_one_line(client: LanguageClient, work: dict[str, Path]) -> None:  # noqa: F811
    client.answers[:] = ["deny"]  # type: ignore[attr-defined]
    hook = "notes.md:\n+mynotes\n/../.git/hooks/pre-commit"
    await turn(client, work, f"WRITE {hook} touch pwned")
    shown = client.asked[0]["preview"]  # type: ignore[attr-defined]
    # before: "write notes.md:\n+mynotes\n/../.git/hooks/pre-commit:\n+touch pwned\n"
    assert shown == "write notes.md:⟨U+000A⟩+mynotes⟨U+000A⟩/../.git/hooks/pre-commit:\n+touch pwned\n", shown
    assert not (work["cwd"] / ".git").exists()
