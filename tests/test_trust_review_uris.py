"""A document URI naming no possible file. `file:///...jsonl%00` (a NUL, percent-encoded) made every `textDocument/*`
request (hover, definition, references, symbols, folding, code lenses, diagnostics) fail with an internal error
(-32603, `ValueError: embedded null byte`, a traceback in the log) instead of a clear InvalidParams; the `sessions/*`
requests refused a NUL already. The real `serve --stdio`, on a copy of the corpus."""

from __future__ import annotations

from pathlib import Path

from rawlsp import RawServer

S1 = "11111111-1111-4111-8111-111111111111"
INVALID_PARAMS = -32602


def test_a_uri_with_a_nul_is_invalid_params_and_the_server_serves_on(corpus_projects: Path) -> None:
    real = f"file://{corpus_projects}/-Users-me-shop/{S1}.jsonl"
    position = {"line": 1, "character": 20}
    with RawServer() as s:
        s.initialize(corpus_projects, watch=False)
        for uri in [real + "%00", real.replace("/-Users-me-shop/", "/-Users-me-shop%00/"), "file:///%00"]:
            s.notify(
                "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "jsonl", "version": 1, "text": ""}}
            )
            s.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
            doc = {"textDocument": {"uri": uri}}
            for method, params in [
                ("textDocument/hover", {**doc, "position": position}),
                ("textDocument/definition", {**doc, "position": position}),
                ("textDocument/references", {**doc, "position": position, "context": {"includeDeclaration": True}}),
                ("textDocument/documentSymbol", doc),
                ("textDocument/foldingRange", doc),
                ("textDocument/codeLens", doc),
                ("textDocument/diagnostic", doc),
            ]:
                reply = s.call(method, params)
                assert reply.get("error", {}).get("code") == INVALID_PARAMS, (method, uri, reply)
                assert "textDocument.uri" in reply["error"]["message"], reply
        hover = s.call("textDocument/hover", {"textDocument": {"uri": real}, "position": position})
        assert "result" in hover and hover["result"] is not None, hover
        assert s.proc.poll() is None
        assert b"embedded null byte" not in s.stderr, s.stderr[-2000:]
