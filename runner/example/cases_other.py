"""Cases on inventory-core (``known``), ledger and notify-relay (both ``unknown``)."""

from __future__ import annotations

from runner.example.spec import CaseSpec, Check, Edit

INV, LED, REL = "inventory-core", "ledger", "notify-relay"
STOCK_OK = Check("stock-keeps-working", "put/take/transfer return values and errors behave as before", "stock_existing", "regression")
ACCOUNTS_OK = Check("accounts-keep-working", "Opening, deposits, transfers, history and errors behave as before", "accounts_existing", "regression")

_LOCK_IMPORT = Edit("invcore/ids.py", "from __future__ import annotations\n", "from __future__ import annotations\n\nimport threading\n")
_IDS_INIT = Edit("invcore/ids.py", '        self._state = {"next": start}\n', '        self._state = {"next": start}\n        self._lock = threading.Lock()\n')
_IDS_BODY = '        number = self._state["next"]\n        self._state["next"] = number + 1\n'
_SNAP_WRITE = ('    document = {"version": FORMAT_VERSION, "stock": stock}\n    with open(path, "w", encoding="utf-8") as fh:\n'
               '        json.dump(document, fh, sort_keys=True)\n')
_LEDGER_LOCK = (Edit("ledger/accounts.py", "from __future__ import annotations\n", "from __future__ import annotations\n\nimport threading\n"),
                Edit("ledger/accounts.py", "        self.history: list[tuple[str, str, int]] = []\n", "        self.history: list[tuple[str, str, int]] = []\n        self._lock = threading.Lock()\n"))
_DEPOSIT = ("        current = self.balance(name)\n        self._balances[name] = current + cents\n"
            "        self.history.append((\"deposit\", name, cents))\n        return current + cents\n")
_DEPOSIT_LOCKED = ("        with self._lock:\n            current = self.balance(name)\n            self._balances[name] = current + cents\n"
                   "            self.history.append((\"deposit\", name, cents))\n            return current + cents\n")
_OPEN = "    def open_account(self, name: str) -> str:\n        self._balances[name] = 0\n"
_TRANSFER_DEBIT = "        self.balance(destination)\n        self._balances[source] = self.balance(source) - cents\n"
_FUNDS_CLASS = Edit("ledger/accounts.py", "class Ledger:\n", 'class InsufficientFunds(Exception):\n    """The source account cannot cover the transfer."""\n\n\nclass Ledger:\n')
_LOAD_LOOP = ("    entries = []\n    for number, line in enumerate(path.read_text(encoding=\"utf-8\").splitlines(), start=1):\n"
              "        if not line.strip():\n            continue\n        try:\n            entries.append(json.loads(line))\n"
              "        except json.JSONDecodeError as exc:\n            raise JournalCorrupt(f\"{path}:{number}: {exc}\") from None\n    return entries\n")
_LOAD_TOLERANT = ("    lines = path.read_text(encoding=\"utf-8\").split(\"\\n\")\n"
                  "    # The file ends with a newline after every complete entry, so the last element is\n"
                  "    # either empty or a write torn by a crash: that one may be skipped, no other.\n"
                  "    complete, tail = lines[:-1], lines[-1]\n    entries = []\n"
                  "    for number, line in enumerate(complete, start=1):\n        if not line.strip():\n            continue\n"
                  "        try:\n            entries.append(json.loads(line))\n        except json.JSONDecodeError as exc:\n"
                  "            raise JournalCorrupt(f\"{path}:{number}: {exc}\") from None\n"
                  "    if tail.strip():\n        try:\n            entries.append(json.loads(tail))\n"
                  "        except json.JSONDecodeError:\n            pass  # torn final write\n    return entries\n")
_VERIFY = ('    """True when the request carries a valid signature."""\n    timestamp = int(headers[TIMESTAMP_HEADER])\n'
           '    return sign(secret, timestamp, body) == headers[SIGNATURE_HEADER]\n')
_VERIFY_HEADERS = ('    try:\n        timestamp = int(headers[TIMESTAMP_HEADER])\n        signature = headers[SIGNATURE_HEADER]\n'
                   '    except (KeyError, ValueError):\n        return False\n')
_BUCKET_LOCK = (Edit("relay/ratelimit.py", "import time\n", "import threading\nimport time\n"),
                Edit("relay/ratelimit.py", '        self._state = {"tokens": float(capacity), "updated": clock()}\n',
                     '        self._state = {"tokens": float(capacity), "updated": clock()}\n        self._lock = threading.Lock()\n'))
_ACQUIRE = ('        self._refill()\n        tokens = self._state["tokens"]\n        if tokens < 1:\n            return False\n'
            '        self._state["tokens"] = tokens - 1\n        return True\n')
_ACQUIRE_LOCKED = ('        with self._lock:\n            self._refill()\n            tokens = self._state["tokens"]\n            if tokens < 1:\n'
                   '                return False\n            self._state["tokens"] = tokens - 1\n            return True\n')
_PUBLISH = ("        for _subscriber_tenant, handler in self._subscribers.get(topic, []):\n"
            "            handler({**message, \"tenant_id\": tenant_id})\n")

CASES = [
    CaseSpec(
        id="sku-format-validation", repo=INV, difficulty="easy", task_class="validation", subsystem="sku",
        prompt=(
            "Typos in SKU codes (\"AB1234\", \"ABCDE-1234\", empty strings) get into the stock tables because "
            "`invcore.sku.parse_sku` only trims and upper-cases. After normalising, a SKU must be two to four "
            "letters, a hyphen and exactly four digits (e.g. `AB-1234`); raise the existing `InvalidSku` for "
            "anything else. Lower-case input with surrounding spaces must still be accepted and normalised."
        ),
        checks=(Check("rejects-malformed-sku", "parse_sku raises InvalidSku for codes not matching LL(LL)-DDDD", "sku_rejects_bad"),
                Check("sku-normalisation-kept", "parse_sku still trims and upper-cases valid codes", "sku_existing", "regression")),
        correct=(Edit("invcore/sku.py", "from __future__ import annotations\n", "from __future__ import annotations\n\nimport re\n\n_SKU = re.compile(r\"[A-Z]{2,4}-[0-9]{4}\")\n"),
                 Edit("invcore/sku.py", "    return raw.strip().upper()\n", "    code = raw.strip().upper()\n    if not _SKU.fullmatch(code):\n        raise InvalidSku(f\"not a SKU code: {raw!r}\")\n    return code\n")),
        wrong=(Edit("invcore/sku.py", "    return raw.strip().upper()\n", "    code = raw.strip().upper()\n    if not code:\n        raise InvalidSku(\"empty SKU\")\n    return code\n"),),
        regression=(Edit("invcore/sku.py", "from __future__ import annotations\n", "from __future__ import annotations\n\nimport re\n\n_SKU = re.compile(r\"[A-Z]{2,4}-[0-9]{4}\")\n"),
                    Edit("invcore/sku.py", "    return raw.strip().upper()\n", "    if not _SKU.fullmatch(raw):\n        raise InvalidSku(f\"not a SKU code: {raw!r}\")\n    return raw\n")),
    ),
    CaseSpec(
        id="take-negative-quantity", repo=INV, difficulty="easy", task_class="validation", subsystem="stock",
        prompt=(
            "A buggy scanner sent `take(sku, -3)`, which silently *added* three units to the warehouse. "
            "Make `invcore.stock.Warehouse.take` raise `ValueError` for a quantity of zero or less, without "
            "touching the stock. Taking more than is stocked must still raise `InsufficientStock`."
        ),
        checks=(Check("rejects-non-positive-take", "take() raises ValueError for 0 and negative quantities and leaves stock unchanged", "take_rejects_non_positive"), STOCK_OK),
        correct=(Edit("invcore/stock.py", "    def take(self, sku: str, quantity: int) -> int:\n", "    def take(self, sku: str, quantity: int) -> int:\n        if quantity <= 0:\n            raise ValueError(f\"quantity must be positive, got {quantity}\")\n"),),
        wrong=(Edit("invcore/stock.py", "    def take(self, sku: str, quantity: int) -> int:\n", "    def take(self, sku: str, quantity: int) -> int:\n        if quantity < 0:\n            raise ValueError(f\"quantity must not be negative, got {quantity}\")\n"),),
        regression=(Edit("invcore/stock.py", "    def take(self, sku: str, quantity: int) -> int:\n", "    def take(self, sku: str, quantity: int) -> int:\n        if quantity <= 0:\n            raise ValueError(f\"quantity must be positive, got {quantity}\")\n"),
                    Edit("invcore/stock.py", '            raise InsufficientStock(f"{self.name}: wanted {quantity} of {sku}, have {have}")\n', '            raise ValueError(f"{self.name}: wanted {quantity} of {sku}, have {have}")\n')),
    ),
    CaseSpec(
        id="transfer-atomic", repo=INV, difficulty="hard", task_class="transactions", subsystem="stock", holdout=True, compile_check=True,
        prompt=(
            "When the destination warehouse is full, `invcore.stock.transfer` raises `CapacityExceeded` but "
            "the units have already been taken from the source, so they vanish. Make `transfer` "
            "all-or-nothing: if putting into the destination fails, the source must end up exactly as before "
            "and the original exception must propagate. A successful transfer must still return the "
            "destination's new quantity."
        ),
        checks=(Check("transfer-rolls-back", "A transfer refused by the destination leaves both warehouses unchanged", "transfer_atomic"), STOCK_OK),
        correct=(Edit("invcore/stock.py", "    source.take(sku, quantity)\n    return destination.put(sku, quantity)\n",
                      "    source.take(sku, quantity)\n    try:\n        return destination.put(sku, quantity)\n    except Exception:\n        source.put(sku, quantity)  # give the units back\n        raise\n"),),
        wrong=(Edit("invcore/stock.py", "    source.take(sku, quantity)\n    return destination.put(sku, quantity)\n",
                    "    if source.quantity(sku) < quantity:\n        raise InsufficientStock(f\"{source.name}: not enough {sku}\")\n    source.take(sku, quantity)\n    return destination.put(sku, quantity)\n"),),
        regression=(Edit("invcore/stock.py", "    source.take(sku, quantity)\n    return destination.put(sku, quantity)\n",
                         "    source.take(sku, quantity)\n    try:\n        destination.put(sku, quantity)\n    except Exception:\n        source.put(sku, quantity)  # give the units back\n        raise\n"),),
    ),
    CaseSpec(
        id="id-allocator-thread-safe", repo=INV, difficulty="medium", task_class="concurrency", subsystem="ids",
        prompt=(
            "We found two stock movements with the same id, `MOV-004211`. `invcore.ids.IdAllocator.next_id` "
            "is shared by the import threads and is not safe under concurrency. Make it thread-safe so every "
            "call returns a distinct id, while keeping the id format and numbering (the first id of a default "
            "allocator is `MOV-000001`, custom prefixes and start numbers keep working)."
        ),
        checks=(Check("unique-ids-under-threads", "Concurrent next_id() calls never return the same id", "ids_thread_safe"),
                Check("id-format-kept", "Ids keep their prefix, zero padding and numbering", "ids_existing", "regression")),
        correct=(_LOCK_IMPORT, _IDS_INIT, Edit("invcore/ids.py", _IDS_BODY, '        with self._lock:\n            number = self._state["next"]\n            self._state["next"] = number + 1\n')),
        wrong=(_LOCK_IMPORT, _IDS_INIT, Edit("invcore/ids.py", _IDS_BODY, '        number = self._state["next"]\n        with self._lock:\n            self._state["next"] = number + 1\n')),
        regression=(_LOCK_IMPORT, _IDS_INIT, Edit("invcore/ids.py", _IDS_BODY, '        with self._lock:\n            self._state["next"] += 1\n            number = self._state["next"]\n')),
    ),
    CaseSpec(
        id="snapshot-atomic-write", repo=INV, difficulty="medium", task_class="persistence", subsystem="snapshot",
        prompt=(
            "A power cut during `write_snapshot` left a half-written `stock.json` and the service refused to "
            "start. Make `invcore.snapshot.write_snapshot` crash-safe: write to a temporary file next to the "
            "target, flush and fsync it, then atomically replace the target; remove the temporary file if "
            "writing fails. `read_snapshot` must keep reading the same document format (with its version field)."
        ),
        checks=(Check("atomic-snapshot", "A failed snapshot write keeps the previous snapshot and leaves no temporary files", "snapshot_atomic"),
                Check("snapshot-format-kept", "Snapshots round-trip and unknown versions are still refused", "snapshot_existing", "regression")),
        correct=(Edit("invcore/snapshot.py", "import json\n", "import json\nimport os\n"),
                 Edit("invcore/snapshot.py", _SNAP_WRITE,
                      '    """Write atomically: temporary file in the same directory, fsync, then rename."""\n    path = Path(path)\n'
                      '    document = {"version": FORMAT_VERSION, "stock": stock}\n    tmp = path.with_name(f".{path.name}.tmp")\n'
                      '    try:\n        with open(tmp, "w", encoding="utf-8") as fh:\n            json.dump(document, fh, sort_keys=True)\n'
                      '            fh.flush()\n            os.fsync(fh.fileno())\n        os.replace(tmp, path)\n'
                      '    except BaseException:\n        tmp.unlink(missing_ok=True)\n        raise\n')),
        wrong=(Edit("invcore/snapshot.py", "import json\n", "import json\nimport shutil\n"),
               Edit("invcore/snapshot.py", _SNAP_WRITE,
                    '    path = Path(path)\n    document = {"version": FORMAT_VERSION, "stock": stock}\n    tmp = path.with_name(f".{path.name}.tmp")\n'
                    '    with open(tmp, "w", encoding="utf-8") as fh:\n        json.dump(document, fh, sort_keys=True)\n'
                    '    shutil.copyfile(tmp, path)\n    tmp.unlink()\n')),
        regression=(Edit("invcore/snapshot.py", "import json\n", "import json\nimport os\n"),
                    Edit("invcore/snapshot.py", '    if document.get("version") != FORMAT_VERSION:\n        raise ValueError(f"{path}: unsupported snapshot version {document.get(\'version\')!r}")\n', ""),
                    Edit("invcore/snapshot.py", _SNAP_WRITE,
                         '    """Write atomically: temporary file in the same directory, fsync, then rename."""\n    path = Path(path)\n'
                         '    document = {"version": FORMAT_VERSION, "stock": stock}\n    tmp = path.with_name(f".{path.name}.tmp")\n'
                         '    try:\n        with open(tmp, "w", encoding="utf-8") as fh:\n            json.dump(document, fh, sort_keys=True)\n'
                         '            fh.flush()\n            os.fsync(fh.fileno())\n        os.replace(tmp, path)\n'
                         '    except BaseException:\n        tmp.unlink(missing_ok=True)\n        raise\n')),
    ),
    CaseSpec(
        id="amount-parse-validation", repo=LED, difficulty="easy", task_class="validation", subsystem="money",
        prompt=(
            "`ledger.money.parse_amount(\"1.239\")` silently truncates to 123 cents and `parse_amount(\"abc\")` "
            "leaks a `decimal.InvalidOperation`. Make `parse_amount` raise the existing `AmountError` for "
            "anything that is not a finite, non-negative amount with at most two decimal places (including "
            "empty strings, NaN and Infinity). Whole amounts such as \"7\" and short ones such as \"0.5\" "
            "must still parse."
        ),
        checks=(Check("rejects-bad-amounts", "parse_amount raises AmountError for bad text, negatives, NaN/Infinity and extra decimals", "amount_rejects_bad"),
                Check("amounts-keep-parsing", "Valid amounts parse to the same cents and format as before", "money_existing", "regression")),
        correct=(Edit("ledger/money.py", "from decimal import Decimal\n", "from decimal import Decimal, InvalidOperation\n"),
                 Edit("ledger/money.py", "    return int(Decimal(text.strip()) * 100)\n",
                      "    try:\n        value = Decimal(text.strip())\n    except InvalidOperation:\n        raise AmountError(f\"not an amount: {text!r}\") from None\n"
                      "    if not value.is_finite() or value < 0 or value.as_tuple().exponent < -2:\n"
                      "        raise AmountError(f\"not a non-negative amount with at most two decimals: {text!r}\")\n"
                      "    return int(value * 100)\n")),
        wrong=(Edit("ledger/money.py", "from decimal import Decimal\n", "from decimal import Decimal, InvalidOperation\n"),
               Edit("ledger/money.py", "    return int(Decimal(text.strip()) * 100)\n",
                    "    try:\n        return int(Decimal(text.strip()) * 100)\n    except InvalidOperation:\n        raise AmountError(f\"not an amount: {text!r}\") from None\n")),
        regression=(Edit("ledger/money.py", "from decimal import Decimal\n", "import re\nfrom decimal import Decimal\n\n_AMOUNT = re.compile(r\"[0-9]+\\.[0-9]{2}\")\n"),
                    Edit("ledger/money.py", "    return int(Decimal(text.strip()) * 100)\n",
                         "    text = text.strip()\n    if not _AMOUNT.fullmatch(text):\n        raise AmountError(f\"not an amount: {text!r}\")\n    return int(Decimal(text) * 100)\n")),
    ),
    CaseSpec(
        id="transfer-insufficient-funds", repo=LED, difficulty="medium", task_class="transactions", subsystem="accounts",
        prompt=(
            "`Ledger.transfer` lets accounts go negative. Add an `InsufficientFunds` exception to "
            "`ledger/accounts.py` and make `transfer` raise it when the source balance is lower than the "
            "amount. A refused transfer must not change any balance or add a history entry. Successful "
            "transfers and their history entries must stay as they are."
        ),
        checks=(Check("refuses-overdraft", "transfer raises InsufficientFunds and changes neither balances nor history", "transfer_checks_funds"), ACCOUNTS_OK),
        correct=(_FUNDS_CLASS, Edit("ledger/accounts.py", _TRANSFER_DEBIT,
                                    "        self.balance(destination)\n        if self.balance(source) < cents:\n"
                                    "            raise InsufficientFunds(f\"{source} has {self.balance(source)}, needs {cents}\")\n"
                                    "        self._balances[source] = self.balance(source) - cents\n")),
        wrong=(_FUNDS_CLASS, Edit("ledger/accounts.py", _TRANSFER_DEBIT,
                                  _TRANSFER_DEBIT + "        if self._balances[source] < 0:\n            raise InsufficientFunds(f\"{source} would be overdrawn\")\n")),
        regression=(_FUNDS_CLASS, Edit("ledger/accounts.py", _TRANSFER_DEBIT,
                                       "        self.balance(destination)\n        if self.balance(source) < cents:\n"
                                       "            raise InsufficientFunds(f\"{source} has {self.balance(source)}, needs {cents}\")\n"
                                       "        self._balances[source] = self.balance(source) - cents\n"),
                    Edit("ledger/accounts.py", '        self.history.append(("transfer", f"{source}->{destination}", cents))\n', "")),
    ),
    CaseSpec(
        id="ledger-thread-safe-deposits", repo=LED, difficulty="hard", task_class="concurrency", subsystem="accounts", compile_check=True,
        prompt=(
            "Payment callbacks arrive on several threads and call `Ledger.deposit` for the same account at "
            "the same time; at the end of the day balances are short. Make deposits (and transfers) on "
            "`ledger.accounts.Ledger` thread-safe so concurrent calls never lose money. Validation of "
            "amounts and the history entries must behave exactly as before."
        ),
        checks=(Check("no-lost-deposits", "Concurrent deposits to one account are all applied", "deposits_thread_safe"), ACCOUNTS_OK),
        correct=(*_LEDGER_LOCK, Edit("ledger/accounts.py", _DEPOSIT, _DEPOSIT_LOCKED),
                 Edit("ledger/accounts.py", "        self.balance(destination)\n        self._balances[source]", "        with self._lock:\n            self._move(source, destination, cents)\n\n"
                      "    def _move(self, source: str, destination: str, cents: int) -> None:\n        self.balance(destination)\n        self._balances[source]")),
        wrong=(Edit("ledger/accounts.py", "from __future__ import annotations\n", "from __future__ import annotations\n\nimport threading\n"),
               Edit("ledger/accounts.py", _DEPOSIT, _DEPOSIT_LOCKED.replace("with self._lock:", "with threading.Lock():"))),
        regression=(*_LEDGER_LOCK, Edit("ledger/accounts.py", _DEPOSIT, _DEPOSIT_LOCKED),
                    Edit("ledger/accounts.py", '        if cents <= 0:\n            raise ValueError("deposits must be positive")\n', "")),
    ),
    CaseSpec(
        id="journal-crash-safe-append", repo=LED, difficulty="medium", task_class="persistence", subsystem="journal", holdout=True,
        prompt=(
            "If the process dies in the middle of `append_entry`, the journal ends with a half-written line "
            "and `load_journal` refuses to load anything. Make `ledger.journal.load_journal` ignore an "
            "incomplete final line (one that is not newline-terminated and is not valid JSON) and return the "
            "entries before it. A corrupt line anywhere before the end must still raise `JournalCorrupt`, and "
            "a missing journal must still load as an empty list."
        ),
        checks=(Check("torn-tail-ignored", "A torn last line is skipped; corruption before the end still raises JournalCorrupt", "journal_torn_tail"),
                Check("journal-keeps-working", "Missing journals, ordered entries and corrupt lines behave as before", "journal_existing", "regression")),
        correct=(Edit("ledger/journal.py", _LOAD_LOOP, _LOAD_TOLERANT),),
        wrong=(Edit("ledger/journal.py", "        except json.JSONDecodeError as exc:\n            raise JournalCorrupt(f\"{path}:{number}: {exc}\") from None\n",
                    "        except json.JSONDecodeError:\n            continue  # skip damaged lines\n"),),
        regression=(Edit("ledger/journal.py", _LOAD_LOOP, _LOAD_TOLERANT),
                    Edit("ledger/journal.py", "    if not path.exists():\n        return []\n", "")),
    ),
    CaseSpec(
        id="account-name-validation", repo=LED, difficulty="easy", task_class="validation", subsystem="accounts",
        prompt=(
            "Opening an account with a name that already exists silently resets its balance to zero. Add a "
            "`DuplicateAccount` exception (a `ValueError`) to `ledger/accounts.py` and make `open_account` "
            "raise it for an existing name, leaving that account untouched; blank names (empty or only spaces) "
            "must raise `ValueError`. Account names stay case-sensitive and are returned unchanged."
        ),
        checks=(Check("rejects-duplicate-and-blank", "open_account refuses duplicates (DuplicateAccount) and blank names (ValueError)", "account_names_checked"), ACCOUNTS_OK),
        correct=(Edit("ledger/accounts.py", "class Ledger:\n", 'class DuplicateAccount(ValueError):\n    """An account with that name already exists."""\n\n\nclass Ledger:\n'),
                 Edit("ledger/accounts.py", _OPEN, "    def open_account(self, name: str) -> str:\n        if not name or not name.strip():\n"
                      "            raise ValueError(\"account names must not be blank\")\n        if name in self._balances:\n"
                      "            raise DuplicateAccount(name)\n        self._balances[name] = 0\n")),
        wrong=(Edit("ledger/accounts.py", "class Ledger:\n", 'class DuplicateAccount(ValueError):\n    """An account with that name already exists."""\n\n\nclass Ledger:\n'),
               Edit("ledger/accounts.py", _OPEN, "    def open_account(self, name: str) -> str:\n        if not name or not name.strip():\n"
                    "            raise ValueError(\"account names must not be blank\")\n        self._balances[name] = 0\n")),
        regression=(Edit("ledger/accounts.py", "class Ledger:\n", 'class DuplicateAccount(ValueError):\n    """An account with that name already exists."""\n\n\nclass Ledger:\n'),
                    Edit("ledger/accounts.py", _OPEN, "    def open_account(self, name: str) -> str:\n        if not name or not name.strip():\n"
                         "            raise ValueError(\"account names must not be blank\")\n        name = name.strip().lower()\n        if name in self._balances:\n"
                         "            raise DuplicateAccount(name)\n        self._balances[name] = 0\n")),
    ),
    CaseSpec(
        id="amount-format-negative", repo=LED, difficulty="easy", task_class="api", subsystem="money",
        lint_check=True,
        prompt=(
            "Refunds show up in statements as \"-2.50\" when they are -1.50: `ledger.money.format_amount` "
            "floors negative cents. Make it format negative amounts with a leading minus and the right "
            "digits (-150 → \"-1.50\", -5 → \"-0.05\"); positive amounts keep their format. The repository's "
            "docstring lint is already red on older modules; that is not part of this request."
        ),
        checks=(Check("formats-negative-amounts", "format_amount gives -1.50 for -150 and -0.05 for -5", "amount_format_negative"),
                Check("money-keeps-working", "parse_amount and format_amount behave as before on valid input", "money_existing", "regression")),
        correct=(Edit("ledger/money.py", '    return f"{cents // 100}.{cents % 100:02d}"\n',
                      '    sign = "-" if cents < 0 else ""\n    cents = abs(cents)\n    return f"{sign}{cents // 100}.{cents % 100:02d}"\n'),),
        wrong=(Edit("ledger/money.py", '    return f"{cents // 100}.{cents % 100:02d}"\n',
                    '    return f"{cents // 100}.{abs(cents) % 100:02d}"\n'),),
        regression=(Edit("ledger/money.py", '    return f"{cents // 100}.{cents % 100:02d}"\n',
                         '    return f"-{abs(cents) // 100}.{abs(cents) % 100:02d}"\n'),),
    ),
    CaseSpec(
        id="sms-recipient-validation", repo=REL, difficulty="easy", task_class="validation", subsystem="messages",
        prompt=(
            "The SMS gateway bills us for every rejected number, and we pass it things like \"555-1234\". "
            "Make `relay.messages.build_message` raise `MessageError` for SMS recipients that are not E.164 "
            "numbers (a `+`, a non-zero first digit, 8 to 15 digits in total, surrounding spaces allowed). "
            "E-mail messages must be validated exactly as today."
        ),
        checks=(Check("rejects-non-e164", "SMS recipients must be E.164 numbers; valid ones are normalised", "sms_recipient_checked"),
                Check("messages-keep-working", "E-mail messages, channels and empty bodies behave as before", "messages_existing", "regression")),
        correct=(Edit("relay/messages.py", "from __future__ import annotations\n", "from __future__ import annotations\n\nimport re\n\n_E164 = re.compile(r\"\\+[1-9][0-9]{7,14}\")\n"),
                 Edit("relay/messages.py", "    return {\"channel\"", "    if channel == \"sms\" and not _E164.fullmatch(recipient.strip()):\n"
                      "        raise MessageError(f\"not an E.164 phone number: {recipient!r}\")\n    return {\"channel\"")),
        wrong=(Edit("relay/messages.py", "    return {\"channel\"", "    if channel == \"sms\" and not recipient.strip().startswith(\"+\"):\n"
                    "        raise MessageError(f\"phone numbers need a country code: {recipient!r}\")\n    return {\"channel\""),),
        regression=(Edit("relay/messages.py", "from __future__ import annotations\n", "from __future__ import annotations\n\nimport re\n\n_E164 = re.compile(r\"\\+[1-9][0-9]{7,14}\")\n"),
                    Edit("relay/messages.py", "    return {\"channel\"", "    if not _E164.fullmatch(recipient.strip()):\n"
                         "        raise MessageError(f\"not an E.164 phone number: {recipient!r}\")\n    return {\"channel\"")),
    ),
    CaseSpec(
        id="signed-request-replay-window", repo=REL, difficulty="hard", task_class="security", subsystem="signing", compile_check=True,
        prompt=(
            "A partner's signed request was captured and replayed a day later, and `verify_request` accepted "
            "it. Make `relay.signing.verify_request` reject requests whose `X-Relay-Timestamp` is more than "
            "300 seconds away from `now` (either direction), return False instead of raising when a header is "
            "missing or the timestamp is not a number, and compare signatures in constant time. The signature "
            "format produced by `sign` (`v1=<hex>`) must not change."
        ),
        checks=(Check("replays-rejected", "Requests outside the 300 s window are rejected; fresh valid ones accepted", "replay_window"),
                Check("malformed-headers-rejected", "Missing headers or a non-numeric timestamp give False, not an exception", "malformed_headers"),
                Check("signing-keeps-working", "sign() output format and basic verification are unchanged", "signing_existing", "regression")),
        correct=(Edit("relay/signing.py", 'SIGNATURE_HEADER = "X-Relay-Signature"\n', 'SIGNATURE_HEADER = "X-Relay-Signature"\nMAX_SKEW_SECONDS = 300\n'),
                 Edit("relay/signing.py", _VERIFY, '    """True only for a valid signature on a fresh request (replays are rejected)."""\n' + _VERIFY_HEADERS +
                      "    if abs(now - timestamp) > MAX_SKEW_SECONDS:\n        return False\n"
                      "    return hmac.compare_digest(sign(secret, timestamp, body).encode(), signature.encode())\n")),
        wrong=(Edit("relay/signing.py", _VERIFY, '    """True when the request carries a valid signature."""\n' + _VERIFY_HEADERS +
                    "    return hmac.compare_digest(sign(secret, timestamp, body).encode(), signature.encode())\n"),),
        regression=(Edit("relay/signing.py", 'SIGNATURE_HEADER = "X-Relay-Signature"\n', 'SIGNATURE_HEADER = "X-Relay-Signature"\nMAX_SKEW_SECONDS = 300\n'),
                    Edit("relay/signing.py", '    return f"v1={digest}"\n', "    return digest\n"),
                    Edit("relay/signing.py", _VERIFY, '    """True only for a valid signature on a fresh request (replays are rejected)."""\n' + _VERIFY_HEADERS +
                         "    if abs(now - timestamp) > MAX_SKEW_SECONDS:\n        return False\n"
                         "    return hmac.compare_digest(sign(secret, timestamp, body).encode(), signature.encode())\n")),
    ),
    CaseSpec(
        id="tenant-topic-isolation", repo=REL, difficulty="medium", task_class="access-control", subsystem="hub", holdout=True,
        prompt=(
            "Tenant B received tenant A's order notifications because both subscribed to the `orders` topic. "
            "Make `relay.hub.Hub.publish(tenant_id, topic, message)` deliver only to handlers that the same "
            "tenant subscribed, and return how many handlers received the message. Delivered messages must "
            "keep carrying the `tenant_id` field, and unsubscribing must keep working."
        ),
        checks=(Check("tenants-isolated", "publish() reaches only the publishing tenant's subscribers", "topic_isolation"),
                Check("hub-keeps-working", "Delivery counts, the tenant_id field and unsubscribe behave as before", "hub_existing", "regression")),
        correct=(Edit("relay/hub.py", _PUBLISH, "        for subscriber_tenant, handler in self._subscribers.get(topic, []):\n"
                      "            if subscriber_tenant != tenant_id:\n                continue\n            handler({**message, \"tenant_id\": tenant_id})\n"),),
        wrong=(Edit("relay/hub.py", _PUBLISH, "        for subscriber_tenant, handler in self._subscribers.get(topic, []):\n"
                    "            if message.get(\"tenant_id\", subscriber_tenant) != subscriber_tenant:\n                continue\n"
                    "            handler({**message, \"tenant_id\": tenant_id})\n"),),
        regression=(Edit("relay/hub.py", _PUBLISH, "        for subscriber_tenant, handler in self._subscribers.get(topic, []):\n"
                         "            if subscriber_tenant != tenant_id:\n                continue\n            handler(message)\n"),),
    ),
    CaseSpec(
        id="rate-limiter-thread-safe", repo=REL, difficulty="hard", task_class="concurrency", subsystem="ratelimit", compile_check=True,
        prompt=(
            "Partners occasionally get more requests through than their limit allows when our worker threads "
            "call `TokenBucket.try_acquire` at the same moment. Make `relay.ratelimit.TokenBucket` thread-safe "
            "so that a bucket never grants more tokens than it holds, whatever the concurrency. Refill "
            "behaviour (fractional tokens per second, capped at capacity) must stay exactly as it is."
        ),
        checks=(Check("never-over-grants", "Concurrent try_acquire() calls never grant more tokens than available", "bucket_thread_safe"),
                Check("refill-keeps-working", "Grants, fractional refill and the capacity cap behave as before", "ratelimit_existing", "regression")),
        correct=(*_BUCKET_LOCK, Edit("relay/ratelimit.py", _ACQUIRE, _ACQUIRE_LOCKED),
                 Edit("relay/ratelimit.py", '        self._refill()\n        return self._state["tokens"]\n', '        with self._lock:\n            self._refill()\n            return self._state["tokens"]\n')),
        wrong=(Edit("relay/ratelimit.py", "import time\n", "import threading\nimport time\n"),
               Edit("relay/ratelimit.py", _ACQUIRE, _ACQUIRE_LOCKED.replace("with self._lock:", "with threading.Lock():"))),
        regression=(*_BUCKET_LOCK, Edit("relay/ratelimit.py", _ACQUIRE, _ACQUIRE_LOCKED),
                    Edit("relay/ratelimit.py", '        elapsed = max(0.0, now - self._state["updated"])\n', '        elapsed = max(0, int(now - self._state["updated"]))\n')),
    ),
]
