"""The ``events`` table of one of our runs, built block by block as Arrow batches (``ingest.stage``).

Each accepted line is one row holding its bytes as read (``payload_json``; an upgraded
line is stored re-dumped at the current version), so the events table is the file's
lines, validated, with their envelope as columns.
"""

from __future__ import annotations

import pyarrow as pa

from contract.envelope import SCHEMA_VERSION
from ingest.block import Block, ReadEvent
from ingest.fastdecode import to_model
from ingest.line_validation import exact_micros
from warehouse.schema import TABLES


class EventsColumns:
    """The ``events`` table, built block by block as Arrow batches and handed out ``chunk`` rows at a time."""

    def __init__(self, run_id: str, source_file: str, batch_id: str, chunk: int = 100_000) -> None:
        self.run_id, self.source_file, self.batch_id, self.chunk = run_id, source_file, batch_id, chunk
        self.schema = pa.schema([f for f in TABLES["events"] if f.name != "run_id"])
        self._source_file, self._batch_id = pa.scalar(source_file, pa.string()), pa.scalar(batch_id, pa.string())
        self.batches: list[pa.RecordBatch] = []
        self.n = 0

    def add(self, re: ReadEvent) -> pa.Table | None:
        return self.add_block(Block([re.event], [re.line], [re.raw], None if re.version == SCHEMA_VERSION
                                    else [re.version], [exact_micros(re.event.ts)]))

    def add_block(self, block: Block) -> pa.Table | None:
        """Append a block's accepted events; a full chunk comes back as a table to write."""
        events, n = block.events, len(block.events)
        v1 = SCHEMA_VERSION
        if block.versions is None:
            payload = block.payload if block.payload is not None else block.raws
            versions = pa.repeat(pa.scalar(v1, pa.int32()), n)
        else:  # v1 lines are stored as read; upgraded ones re-dumped
            payload = [raw if v == v1 else to_model(e).model_dump_json().encode()
                       for raw, v, e in zip(block.raws, block.versions, events, strict=True)]
            versions = pa.array(block.versions, pa.int32())
        seqs, kinds, trial_ids, _rids = zip(*block.envelope(), strict=True)
        cols = {
            "seq": pa.array(seqs, pa.int64()),
            "event": pa.array(kinds, pa.string()),
            "schema_version": versions,
            "trial_id": pa.array(trial_ids, pa.string()),
            "ts": pa.array(block.micros, pa.int64()),
            # constant columns by repetition: a list of n references costs a UTF-8 copy per row
            "source_file": pa.repeat(self._source_file, n),
            "line": pa.array(block.lines, pa.int64()),
            # bytes → UTF-8 checked by Arrow (large_binary: pyarrow builds binary from many bytes slowly)
            "payload_json": payload if isinstance(payload, pa.Array) else pa.array(payload, pa.large_binary()),
            "ingest_batch_id": pa.repeat(self._batch_id, n),
        }
        arrays = [cols[f.name] if cols[f.name].type == f.type else cols[f.name].cast(f.type) for f in self.schema]
        self.batches.append(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self.n += n
        return self.flush() if self.n >= self.chunk else None

    def flush(self) -> pa.Table | None:
        """The buffered rows as one table (without the run_id partition column)."""
        if not self.batches:
            return None
        out = pa.Table.from_batches(self.batches, schema=self.schema)
        self.batches, self.n = [], 0
        return out
