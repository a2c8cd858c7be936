"""The incremental SSE decoder: same events whatever the chunking and line endings."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runner.gateway.sse import SseDecoder, SseEvent, encode

STREAM = (
    ": a comment\n"
    "event: message_start\ndata: {\"a\": 1}\n\n"
    "data: line one\ndata: line two\n\n"
    "event: ping\n\n"  # no data: not dispatched
    "event: message_stop\ndata:{\"z\":\"é\"}\n\n"
)
EXPECTED = [SseEvent("message_start", '{"a": 1}'), SseEvent("message", "line one\nline two"),
            SseEvent("message_stop", '{"z":"é"}')]


def decode(chunks: list[bytes]) -> list[SseEvent]:
    decoder = SseDecoder()
    out = []
    for chunk in chunks:
        out += decoder.feed(chunk)
    return out + decoder.close()


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM.encode())), max_size=12),
       st.sampled_from(["\n", "\r\n", "\r"]))
def test_any_chunking_and_line_ending_gives_the_same_events(cuts, newline):
    raw = STREAM.replace("\n", newline).encode()
    points = sorted(set(cuts))
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert decode(chunks) == EXPECTED


def test_last_event_without_blank_line_still_counts_and_encode_round_trips():
    assert decode([b"data: tail"]) == [SseEvent("message", "tail")]
    assert decode([encode("x", {"k": [1, 2]}), encode(None, "a\nb")]) == [
        SseEvent("x", '{"k":[1,2]}'), SseEvent("message", "a\nb")]
    assert SseEvent("m", "[DONE]").json() is None and SseEvent("m", "{}").json() == {}
