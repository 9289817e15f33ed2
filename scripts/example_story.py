"""The story of the bundled example: a tiny invoicing package with a bug, and what the scripted
model answers at each step of the sessions that fix it (used by scripts/make_example.py).

`PROJECT` is the package as it stands before the fix. `script(work)` maps each prompt (a user's or a
subagent's) to the model's replies, one per request the CLI makes for that prompt: the first answers
the prompt, each next one answers the tool results of the previous. `planner(work)` turns that into a
`tests/scripted_api.py` planner. Nothing here talks to a real model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

Block = dict[str, Any]
Reply = list[Block]
Plan = tuple[str, list[Block]]

PROJECT = {
    "ledger/__init__.py": '''"""Tiny invoicing helpers: amounts are integer cents."""

from ledger.invoice import Invoice
from ledger.money import format_cents, split_evenly

__all__ = ["Invoice", "format_cents", "split_evenly"]
''',
    "ledger/money.py": '''"""Amounts in integer cents: formatting and division."""


def format_cents(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}${cents // 100}.{cents % 100:02d}"


def split_evenly(total_cents: int, parts: int) -> list[int]:
    """Split an amount into `parts` shares that add up to the total."""
    if parts <= 0:
        raise ValueError("parts must be positive")
    share = total_cents // parts
    return [share] * parts
''',
    "ledger/invoice.py": '''"""An invoice: lines of (description, cents), a tax rate, and its split between payers."""

from dataclasses import dataclass, field

from ledger.money import split_evenly


@dataclass
class Invoice:
    lines: list[tuple[str, int]] = field(default_factory=list)
    tax_rate: float = 0.0

    def add(self, description: str, cents: int) -> None:
        self.lines.append((description, cents))

    def subtotal(self) -> int:
        return sum(cents for _, cents in self.lines)

    def tax(self) -> int:
        return round(self.subtotal() * self.tax_rate)

    def total(self) -> int:
        return self.subtotal() + self.tax()

    def shares(self, payers: int) -> list[int]:
        return split_evenly(self.total(), payers)
''',
    "tests/__init__.py": "",
    "tests/test_money.py": """import unittest

from ledger import Invoice, format_cents, split_evenly


class MoneyTest(unittest.TestCase):
    def test_format(self) -> None:
        self.assertEqual(format_cents(123456), "$1234.56")

    def test_format_negative(self) -> None:
        self.assertEqual(format_cents(-5), "-$0.05")

    def test_split_even_amount(self) -> None:
        self.assertEqual(split_evenly(900, 3), [300, 300, 300])

    def test_invoice_shares_add_up(self) -> None:
        invoice = Invoice()
        invoice.add("design review", 10000)
        self.assertEqual(sum(invoice.shares(3)), invoice.total())


if __name__ == "__main__":
    unittest.main()
""",
    ".gitignore": "__pycache__/\n",
    "README.md": "# ledger\n\nSplit invoices between payers. Run the tests with `python3 -m unittest -q`.\n",
}

BUG_PROMPT = (
    "Splitting a $100.00 invoice between three people gives $33.33 each, so a cent goes missing. "
    "Can you find out why and fix it?"
)
TEST_PROMPT = "Add a regression test for the three-way split, and check that the first payers get the extra cents."
AUDIT_PROMPT = "Before I merge the rounding fix: does anything else in ledger/ round money the same way?"
AGENT_PROMPT = (
    "Look through ledger/ for every place that divides or rounds an amount in cents (//, round(), int()). "
    "For each give file:line and whether it can lose or invent a cent. Report only, do not edit files."
)
FORK_PROMPT = "On a branch: make Invoice.tax() round half up instead, and run the tests."
ROUNDING = r"//|divmod|round\(|int\("
COMPACT_INSTRUCTION = "CRITICAL: Respond with TEXT ONLY."

OLD_SPLIT = "    share = total_cents // parts\n    return [share] * parts\n"
NEW_SPLIT = (
    "    share, rest = divmod(total_cents, parts)\n"
    "    # The first `rest` payers carry one cent more, so the shares always add up to the total.\n"
    "    return [share + 1 if i < rest else share for i in range(parts)]\n"
)
OLD_TEST_TAIL = """        self.assertEqual(sum(invoice.shares(3)), invoice.total())
"""
NEW_TEST_TAIL = """        self.assertEqual(sum(invoice.shares(3)), invoice.total())

    def test_split_gives_the_remainder_to_the_first_payers(self) -> None:
        self.assertEqual(split_evenly(10000, 3), [3334, 3333, 3333])
        self.assertEqual(split_evenly(10001, 3), [3334, 3334, 3333])
"""
OLD_IMPORT = "from dataclasses import dataclass, field\n"
NEW_IMPORT = "from dataclasses import dataclass, field\nfrom decimal import ROUND_HALF_UP, Decimal\n"
OLD_TAX = "        return round(self.subtotal() * self.tax_rate)\n"
NEW_TAX = (
    "        # Half a cent rounds up, as on paper; round() would round 12.5 down to 12.\n"
    "        exact = Decimal(self.subtotal()) * Decimal(str(self.tax_rate))\n"
    "        return int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))\n"
)
RUN_TESTS = "python3 -m unittest -q"

SUMMARY = """Summary:
1. Primary request: splitting a $100.00 invoice three ways gave $33.33 per payer, so one cent went missing; \
find the cause and fix it.
2. Key concepts: amounts are integer cents (ledger/money.py); Invoice.shares() delegates to split_evenly().
3. Files:
   - ledger/money.py: split_evenly() used `total_cents // parts` and dropped the remainder. Now it uses \
divmod() and gives the first `rest` payers one extra cent.
   - tests/test_money.py: test_invoice_shares_add_up failed before the fix and passes after.
4. Errors and fixes: 10000 // 3 = 3333, and 3 * 3333 = 9999; the remainder cent was never assigned.
5. Pending: nothing; all 4 tests pass (`python3 -m unittest -q`).
6. Next step: none requested yet."""


def _text(text: str) -> Block:
    return {"type": "text", "text": text}


def _tool(name: str, tool_input: dict[str, Any]) -> Block:
    return {"type": "tool_use", "id": "", "name": name, "input": tool_input}


def script(work: Path) -> dict[str, list[Reply]]:
    """prompt -> the model's replies to it, in order (`work` is the project's folder)."""
    money, invoice, tests = (str(work / p) for p in ("ledger/money.py", "ledger/invoice.py", "tests/test_money.py"))
    bash = {"command": RUN_TESTS, "description": "Run the unit tests"}
    return {
        BUG_PROMPT: [
            [_text("Let me find where the shares are computed."), _tool("Grep", {"pattern": "def split", "path": "."})],
            [_tool("Read", {"file_path": money})],
            [
                _text(
                    "`split_evenly` computes `total_cents // parts` and hands every payer that share, so the "
                    "remainder is dropped: 10000 // 3 = 3333 and 3 × 3333 = 9999. Let me confirm with the tests."
                ),
                _tool("Bash", bash),
            ],
            [
                _text("`test_invoice_shares_add_up` fails as expected (9999 != 10000). Fixing it with `divmod`:"),
                _tool("Edit", {"file_path": money, "old_string": OLD_SPLIT, "new_string": NEW_SPLIT}),
            ],
            [_tool("Bash", bash)],
            [
                _text(
                    "Fixed. `split_evenly` in `ledger/money.py` dropped the remainder of the integer division. "
                    "It now uses `divmod` and gives the first `rest` payers one extra cent, so $100.00 "
                    "splits as $33.34 + $33.33 + $33.33. All 4 tests pass."
                )
            ],
        ],
        TEST_PROMPT: [
            [_tool("Read", {"file_path": tests})],
            [_tool("Edit", {"file_path": tests, "old_string": OLD_TEST_TAIL, "new_string": NEW_TEST_TAIL})],
            [_tool("Bash", bash)],
            [
                _text(
                    "Added `test_split_gives_the_remainder_to_the_first_payers`: 10000 splits as "
                    "[3334, 3333, 3333] and 10001 as [3334, 3334, 3333]. 5 tests, all passing."
                )
            ],
        ],
        AUDIT_PROMPT: [
            [
                _text("I'll have a subagent audit the package while the fix is fresh."),
                _tool(
                    "Agent",
                    {
                        "description": "Audit money rounding",
                        "prompt": AGENT_PROMPT,
                        "subagent_type": "general-purpose",
                        "run_in_background": False,
                    },
                ),
            ],
            [
                _text(
                    "One more place rounds money: `Invoice.tax()` uses `round()`, which rounds halves to even, "
                    "so a tax of 12.5 cents becomes 12 and 13.5 becomes 14. It cannot lose a cent between "
                    "payers (the total is split after rounding), but it differs from the round-half-up most "
                    "invoices use. I'd fix that in a separate change with `decimal.ROUND_HALF_UP`; the "
                    "split fix is safe to merge."
                )
            ],
        ],
        AGENT_PROMPT: [
            [_tool("Grep", {"pattern": ROUNDING, "path": "ledger", "output_mode": "content", "-n": True})],
            [_tool("Read", {"file_path": invoice})],
            [
                _text(
                    "Found 3 places:\n"
                    "- ledger/money.py:7 `cents // 100` in format_cents: formatting only, exact.\n"
                    "- ledger/money.py:14 `divmod(total_cents, parts)` in split_evenly: the remainder is "
                    "handed out, shares add up to the total.\n"
                    "- ledger/invoice.py:20 `round(self.subtotal() * self.tax_rate)` in Invoice.tax: Python "
                    "rounds halves to even, so 12.5 cents of tax becomes 12. No cent is lost between payers, "
                    "but the tax can be a cent lower than round-half-up would give."
                )
            ],
        ],
        FORK_PROMPT: [
            [_tool("Read", {"file_path": invoice})],
            [_tool("Edit", {"file_path": invoice, "old_string": OLD_IMPORT, "new_string": NEW_IMPORT})],
            [_tool("Edit", {"file_path": invoice, "old_string": OLD_TAX, "new_string": NEW_TAX})],
            [_tool("Bash", bash)],
            [
                _text(
                    "`Invoice.tax()` now multiplies in `Decimal` and rounds with `ROUND_HALF_UP`, so 12.5 cents "
                    "of tax is 13 and 13.5 is 14. The 5 existing tests pass; none covers a half cent yet, "
                    "so add one before merging this branch."
                )
            ],
        ],
    }


def _blocks(message: dict[str, Any]) -> list[Block]:
    content = message.get("content")
    if isinstance(content, str):
        return [_text(content)]
    return [b for b in content or [] if isinstance(b, dict)]


def _texts(message: dict[str, Any]) -> list[str]:
    return [str(b.get("text", "")).strip() for b in _blocks(message) if b.get("type") == "text"]


class Unscripted(LookupError):
    """The CLI made a request the story has no reply for."""


def planner(work: Path, unscripted: list[str]) -> Callable[[list[Any]], Plan]:
    """A planner for `ScriptedModelServer`: the reply for the latest scripted prompt in the request,
    picked by how many replies follow it; a compaction request gets `SUMMARY`. Requests it cannot
    place get a short text and are noted in `unscripted`, so the generator can fail loudly."""
    replies = script(work)

    def plan(messages: list[Any]) -> Plan:
        users = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"]
        if users and any(t.startswith(COMPACT_INSTRUCTION) for t in _texts(messages[users[-1]])):
            return "normal", [_text(SUMMARY)]
        for i in reversed(users):
            prompt = next((t for t in _texts(messages[i]) if t in replies), None)
            if prompt is None:
                continue
            turn = sum(1 for m in messages[i + 1 :] if m.get("role") == "assistant")
            if turn < len(replies[prompt]):
                return "normal", [dict(b) for b in replies[prompt][turn]]
            break
        last = _texts(messages[users[-1]]) if users else []
        unscripted.append(last[-1][:200] if last else "(no text)")
        return "normal", [_text("(the example's script has no reply here)")]

    return plan
