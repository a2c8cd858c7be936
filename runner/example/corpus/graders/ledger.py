"""Checks for the ledger repository (targets and regressions).

Each check observes the code under test in a child process (``see``) and declares what it
must observe (``@check``); the trusted parent in ``_harness`` compares the two.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from _harness import RacyDict, check, in_threads, outcome, raised, run

BAD_AMOUNTS = ("1.239", "abc", "-5", "NaN", "", "Infinity")


@check({f"parse_amount({bad!r})": raised("AmountError") for bad in BAD_AMOUNTS})
def amount_rejects_bad(see):
    from ledger.money import AmountError, parse_amount

    for bad in BAD_AMOUNTS:
        see(f"parse_amount({bad!r})", outcome(AmountError, parse_amount, bad))


@check({"parse_amount('12.34')": 1234, "parse_amount('7')": 700, "parse_amount(' 0.5 ')": 50,
        "format_amount(1234)": "12.34"})
def money_existing(see):
    from ledger.money import format_amount, parse_amount

    for text in ("12.34", "7", " 0.5 "):
        see(f"parse_amount({text!r})", parse_amount(text))
    see("format_amount(1234)", format_amount(1234))


@check({"format_amount(-150)": "-1.50", "format_amount(-5)": "-0.05", "format_amount(-100)": "-1.00"})
def amount_format_negative(see):
    from ledger.money import format_amount

    for cents in (-150, -5, -100):
        see(f"format_amount({cents})", format_amount(cents))


@check({"transfer over the balance": raised("InsufficientFunds"), "balances after a refused transfer": [100, 0],
        "history after a refused transfer": 1})
def transfer_checks_funds(see):
    from ledger.accounts import InsufficientFunds, Ledger

    led = Ledger()
    led.open_account("alice")
    led.open_account("bob")
    led.deposit("alice", 100)
    see("transfer over the balance", outcome(InsufficientFunds, led.transfer, "alice", "bob", 150))
    see("balances after a refused transfer", (led.balance("alice"), led.balance("bob")))
    see("history after a refused transfer", len(led.history))


@check({"open_account returns the name": "Ops", "deposit returns the new balance": 500,
        "balances after transfer": [300, 200], "history": [["deposit", "Ops", 500], ["transfer", "Ops->b", 200]],
        "deposit(-5)": raised("ValueError"), "deposit(0)": raised("ValueError"),
        "balance of an unknown account": raised("UnknownAccount")})
def accounts_existing(see):
    from ledger.accounts import Ledger, UnknownAccount

    led = Ledger()
    see("open_account returns the name", led.open_account("Ops"))
    led.open_account("b")
    see("deposit returns the new balance", led.deposit("Ops", 500))
    led.transfer("Ops", "b", 200)
    see("balances after transfer", (led.balance("Ops"), led.balance("b")))
    see("history", led.history)
    see("deposit(-5)", outcome(ValueError, led.deposit, "Ops", -5))
    see("deposit(0)", outcome(ValueError, led.deposit, "Ops", 0))
    see("balance of an unknown account", outcome(UnknownAccount, led.balance, "nobody"))


@check({"balance after two concurrent deposits": 20, "balance after 4 x 100 concurrent deposits": 400})
def deposits_thread_safe(see):
    from ledger.accounts import Ledger

    led = Ledger()
    led.open_account("a")
    led._balances = RacyDict(led._balances, "a")
    in_threads(lambda: led.deposit("a", 10), 2)
    see("balance after two concurrent deposits", led.balance("a"))
    many = Ledger()
    many.open_account("x")
    in_threads(lambda: [many.deposit("x", 1) for _ in range(100)], 4)
    see("balance after 4 x 100 concurrent deposits", many.balance("x"))


@check({"a duplicate open": raised("DuplicateAccount"), "balance after a duplicate open": 100,
        "an empty name": raised("ValueError"), "a blank name": raised("ValueError")})
def account_names_checked(see):
    from ledger.accounts import DuplicateAccount, Ledger

    led = Ledger()
    led.open_account("a")
    led.deposit("a", 100)
    see("a duplicate open", outcome(DuplicateAccount, led.open_account, "a"))
    see("balance after a duplicate open", led.balance("a"))
    see("an empty name", outcome(ValueError, led.open_account, ""))
    see("a blank name", outcome(ValueError, led.open_account, "   "))


@check({"entries before a torn last line": [{"n": 1}, {"n": 2}], "a torn middle line": raised("JournalCorrupt")})
def journal_torn_tail(see):
    from ledger.journal import JournalCorrupt, append_entry, load_journal

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "journal.jsonl"
        append_entry(path, {"n": 1})
        append_entry(path, {"n": 2})
        with open(path, "a", encoding="utf-8") as fh:
            fh.write('{"n": 3, "amo')
        see("entries before a torn last line", load_journal(path))
        path.write_text('{"n": 1}\n{"n": 2\n{"n": 3}\n', encoding="utf-8")
        see("a torn middle line", outcome(JournalCorrupt, load_journal, path))


@check({"missing journal": [], "entries in order": [{"n": 1}, {"n": 2}], "a line that is not json":
        raised("JournalCorrupt")})
def journal_existing(see):
    from ledger.journal import JournalCorrupt, append_entry, load_journal

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "journal.jsonl"
        see("missing journal", load_journal(path))
        append_entry(path, {"n": 1})
        append_entry(path, {"n": 2})
        see("entries in order", load_journal(path))
        path.write_text('{"n": 1}\nnot json\n{"n": 3}\n', encoding="utf-8")
        see("a line that is not json", outcome(JournalCorrupt, load_journal, path))


CHECKS = {f.__name__: f for f in [
    amount_rejects_bad, money_existing, amount_format_negative, transfer_checks_funds, accounts_existing,
    deposits_thread_safe, account_names_checked, journal_torn_tail, journal_existing,
]}

if __name__ == "__main__":
    run(CHECKS)
