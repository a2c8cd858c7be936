"""Accounts, balances and transfers between them."""

from __future__ import annotations


class UnknownAccount(KeyError):
    """No account with that name."""


class Ledger:
    def __init__(self) -> None:
        self._balances: dict[str, int] = {}
        self.history: list[tuple[str, str, int]] = []

    def open_account(self, name: str) -> str:
        self._balances[name] = 0
        return name

    def balance(self, name: str) -> int:
        try:
            return self._balances[name]
        except KeyError:
            raise UnknownAccount(name) from None

    def deposit(self, name: str, cents: int) -> int:
        if cents <= 0:
            raise ValueError("deposits must be positive")
        current = self.balance(name)
        self._balances[name] = current + cents
        self.history.append(("deposit", name, cents))
        return current + cents

    def transfer(self, source: str, destination: str, cents: int) -> None:
        if cents <= 0:
            raise ValueError("transfers must be positive")
        self.balance(destination)
        self._balances[source] = self.balance(source) - cents
        self._balances[destination] += cents
        self.history.append(("transfer", f"{source}->{destination}", cents))
