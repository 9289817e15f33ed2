"""Write, Edit: change files inside the working directory (off unless the user turns them on).

Edit holds the file and its result in memory, so both are bounded (MAX_EDIT_BYTES): a file larger
than memory, or a `replace_all` that would grow a file beyond bound, is refused, not attempted."""

from __future__ import annotations

from typing import Any

from server.agent.tools.base import ToolContext, ToolError, ToolOutput, schema, string_arg

MAX_EDIT_BYTES = 16 * 1024 * 1024


class WriteTool:
    name = "Write"
    read_only = False

    def schema(self) -> dict[str, Any]:
        return schema(
            self.name,
            "Writes a file in the working directory, replacing it if it exists.",
            {
                "file_path": {"type": "string", "description": "The absolute path to the file to write"},
                "content": {"type": "string", "description": "The content to write to the file"},
            },
            ["file_path", "content"],
        )

    def run(self, tool_input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raw = string_arg(tool_input, "file_path")
        content = string_arg(tool_input, "content") or ""
        path = ctx.confine(raw)
        if path.is_dir():
            raise ToolError(f"{raw} is a directory")
        existed = path.exists()
        ctx.checkpoint()
        ctx.make_folders(path.parent)
        ctx.write_text(path, content)
        verb = "updated" if existed else "created"
        return ToolOutput(
            f"File {verb} successfully at: {raw}",
            extra={"type": "update" if existed else "create", "filePath": raw, "content": content},
        )


class EditTool:
    name = "Edit"
    read_only = False

    def schema(self) -> dict[str, Any]:
        return schema(
            self.name,
            "Replaces old_string with new_string in a file; old_string must be unique unless replace_all.",
            {
                "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
                "old_string": {"type": "string", "description": "The text to replace"},
                "new_string": {"type": "string", "description": "The text to replace it with"},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence"},
            },
            ["file_path", "old_string", "new_string"],
        )

    def run(self, tool_input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raw = string_arg(tool_input, "file_path")
        old = string_arg(tool_input, "old_string") or ""
        new = string_arg(tool_input, "new_string") or ""
        path = ctx.confine(raw, must_exist=True)
        if old == new:
            raise ToolError("No changes to make: old_string and new_string are exactly the same.")
        if path.is_dir():
            raise ToolError(f"{raw} is a directory")
        data = ctx.read_bytes(path, limit=MAX_EDIT_BYTES + 1)
        if len(data) > MAX_EDIT_BYTES:
            raise ToolError(f"{raw} is too large to edit (more than {MAX_EDIT_BYTES} bytes)")
        text = data.decode("utf-8")
        count = text.count(old) if old else 0
        if count == 0:
            raise ToolError(f"String to replace not found in file.\nString: {old}")
        every = replaces_all(tool_input)
        if count > 1 and not every:
            raise ToolError(
                f"Found {count} matches of the string to replace, but replace_all is false. "
                "Set replace_all to true or give more context to make it unique."
            )
        grown = len(text) + (count if every else 1) * (len(new) - len(old))
        if grown > MAX_EDIT_BYTES:
            raise ToolError(f"the edited {raw} would be too large ({grown} characters, at most {MAX_EDIT_BYTES})")
        ctx.write_text(path, text.replace(old, new) if every else text.replace(old, new, 1))
        return ToolOutput(
            f"The file {raw} has been updated.", extra={"filePath": raw, "oldString": old, "newString": new}
        )


def replaces_all(tool_input: dict[str, Any]) -> bool:
    """Whether an Edit call replaces every occurrence of `old_string`: its `replace_all`, any true value. The one
    rule for the edit and for its permission prompt, which says so (`server.agent.permissions.preview`)."""
    return bool(tool_input.get("replace_all"))
