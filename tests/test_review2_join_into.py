"""`storage.apiform._join_into` (in place, in the time of the blocks added) against `_join_user` (a new list each
time), over random runs of joins with the content reassigned between them as `storage.apiform` does: a fold beside
a tool result (results first again, count unknown), `_pair_tools` dropping results whose call is gone (count kept,
stale), the orphaned-result placeholder. The content and its order are the same whichever way it is joined."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from storage.apiform import _is_result, _join_into, _join_user, _Msg, _results_first

_counter = iter(range(10**9))


def _block(kind: str) -> dict[str, Any]:
    n = next(_counter)
    if kind == "tool_result":
        return {"type": "tool_result", "tool_use_id": f"t{n % 5}", "content": str(n)}
    if kind == "image":
        return {"type": "image", "source": {"data": str(n)}}
    return {"type": kind, "text": str(n)}


BLOCKS = st.lists(st.sampled_from(["text", "tool_result", "image", "document"]).map(_block), max_size=5)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("join"), BLOCKS),
        st.tuples(st.just("fold"), BLOCKS),
        st.tuples(st.just("drop"), st.integers(0, 4)),
        st.tuples(st.just("orphan"), st.just([])),
    ),
    max_size=25,
)


@settings(max_examples=600, deadline=None)
@given(first=BLOCKS, ops=OPS)
def test_join_into_keeps_the_order_of_join_user(first: list[Any], ops: list[tuple[str, Any]]) -> None:
    msg = _Msg("user", _results_first(first))
    model = list(msg.content)
    for op, arg in ops:
        if op == "join":
            _join_into(msg, list(arg))
            model = _join_user(model, list(arg))
        elif op == "fold":  # add_user_attachment's fold: a new list, results first, count unknown
            msg.content, msg.results = _results_first([*msg.content, *arg]), -1
            model = _results_first([*model, *arg])
        elif op == "drop":  # _pair_tools: results whose call is gone left out, the count not updated
            gone = f"t{arg}"
            msg.content = [b for b in msg.content if not (_is_result(b) and b.get("tool_use_id") == gone)]
            model = [b for b in model if not (_is_result(b) and b.get("tool_use_id") == gone)]
        elif not msg.content:  # the orphaned-result placeholder
            msg.content = [{"type": "text", "text": "orphan"}]
            model = [{"type": "text", "text": "orphan"}]
        assert msg.content == model
