"""A double-entry-ish ledger: amounts, accounts and an append-only journal."""
