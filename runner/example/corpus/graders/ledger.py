"""Checks for the ledger repository (targets and regressions)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from _harness import RacyDict, equal, in_threads, raises, run


def amount_rejects_bad():
    from ledger.money import AmountError, parse_amount

    for bad in ("1.239", "abc", "-5", "NaN", "", "Infinity"):
        raises(AmountError, parse_amount, bad)


def money_existing():
    from ledger.money import format_amount, parse_amount

    equal(parse_amount("12.34"), 1234, "parse_amount('12.34')")
    equal(parse_amount("7"), 700, "parse_amount('7')")
    equal(parse_amount(" 0.5 "), 50, "parse_amount(' 0.5 ')")
    equal(format_amount(1234), "12.34", "format_amount(1234)")


def amount_format_negative():
    from ledger.money import format_amount

    equal(format_amount(-150), "-1.50", "format_amount(-150)")
    equal(format_amount(-5), "-0.05", "format_amount(-5)")
    equal(format_amount(-100), "-1.00", "format_amount(-100)")


def transfer_checks_funds():
    from ledger.accounts import InsufficientFunds, Ledger

    led = Ledger()
    led.open_account("alice")
    led.open_account("bob")
    led.deposit("alice", 100)
    raises(InsufficientFunds, led.transfer, "alice", "bob", 150)
    equal((led.balance("alice"), led.balance("bob")), (100, 0), "balances after a refused transfer")
    equal(len(led.history), 1, "history after a refused transfer")


def accounts_existing():
    from ledger.accounts import Ledger, UnknownAccount

    led = Ledger()
    equal(led.open_account("Ops"), "Ops", "open_account returns the name")
    led.open_account("b")
    equal(led.deposit("Ops", 500), 500, "deposit returns the new balance")
    led.transfer("Ops", "b", 200)
    equal((led.balance("Ops"), led.balance("b")), (300, 200), "balances after transfer")
    equal(led.history, [("deposit", "Ops", 500), ("transfer", "Ops->b", 200)], "history")
    raises(ValueError, led.deposit, "Ops", -5)
    raises(ValueError, led.deposit, "Ops", 0)
    raises(UnknownAccount, led.balance, "nobody")


def deposits_thread_safe():
    from ledger.accounts import Ledger

    led = Ledger()
    led.open_account("a")
    led._balances = RacyDict(led._balances, "a")
    in_threads(lambda: led.deposit("a", 10), 2)
    equal(led.balance("a"), 20, "balance after two concurrent deposits")
    many = Ledger()
    many.open_account("x")
    in_threads(lambda: [many.deposit("x", 1) for _ in range(100)], 4)
    equal(many.balance("x"), 400, "balance after 4 x 100 concurrent deposits")


def account_names_checked():
    from ledger.accounts import DuplicateAccount, Ledger

    led = Ledger()
    led.open_account("a")
    led.deposit("a", 100)
    raises(DuplicateAccount, led.open_account, "a")
    equal(led.balance("a"), 100, "balance after a duplicate open")
    raises(ValueError, led.open_account, "")
    raises(ValueError, led.open_account, "   ")


def journal_torn_tail():
    from ledger.journal import JournalCorrupt, append_entry, load_journal

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "journal.jsonl"
        append_entry(path, {"n": 1})
        append_entry(path, {"n": 2})
        with open(path, "a", encoding="utf-8") as fh:
            fh.write('{"n": 3, "amo')
        equal(load_journal(path), [{"n": 1}, {"n": 2}], "entries before a torn last line")
        path.write_text('{"n": 1}\n{"n": 2\n{"n": 3}\n', encoding="utf-8")
        raises(JournalCorrupt, load_journal, path)


def journal_existing():
    from ledger.journal import JournalCorrupt, append_entry, load_journal

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "journal.jsonl"
        equal(load_journal(path), [], "missing journal")
        append_entry(path, {"n": 1})
        append_entry(path, {"n": 2})
        equal(load_journal(path), [{"n": 1}, {"n": 2}], "entries in order")
        path.write_text('{"n": 1}\nnot json\n{"n": 3}\n', encoding="utf-8")
        raises(JournalCorrupt, load_journal, path)


CHECKS = {f.__name__: f for f in [
    amount_rejects_bad, money_existing, amount_format_negative, transfer_checks_funds, accounts_existing,
    deposits_thread_safe, account_names_checked, journal_torn_tail, journal_existing,
]}

if __name__ == "__main__":
    run(CHECKS)
