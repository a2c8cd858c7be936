"""A visible check for ledger (``visible: true`` in the sweep manifest): the agent may run it.

It is deliberately the easy half of the hidden target check ``refuses-overdraft``: a change
that raises ``InsufficientFunds`` only after debiting the account passes here and fails
there (the balance changed), which is the gap between visible and hidden results the
report shows (docs/example-corpus.md, "The budget sweep and the visible check"). Its
verdict is decided as every example grader's is: by ``_harness``'s trusted parent, from what
a child that imports the workspace observed (docs/security.md, "The verdict channel").
"""

from __future__ import annotations

from _harness import check, outcome, raised, run


@check({"transfer over the balance": raised("InsufficientFunds")})
def transfer_raises_on_overdraft(see):
    from ledger.accounts import InsufficientFunds, Ledger

    led = Ledger()
    led.open_account("alice")
    led.open_account("bob")
    led.deposit("alice", 100)
    see("transfer over the balance", outcome(InsufficientFunds, led.transfer, "alice", "bob", 150))


if __name__ == "__main__":
    run({"transfer_raises_on_overdraft": transfer_raises_on_overdraft})
