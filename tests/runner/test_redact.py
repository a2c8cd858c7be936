"""Secret redaction and bounded output files, on real text and real files."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contract import redact as redact_mod
from contract.redact import REDACTED, redact, redact_file

ANTHROPIC = "sk-ant-api03-" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6kL9nP2rS5uX8zA1cD4fG7iJ0lM3oR6tU9wY2"
OPENAI = "sk-proj-" + "Zx9Wv8Ut7Sr6Qp5On4Ml3Kj2Ih1Gf0Ed"
GITHUB = "ghp_" + "1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ12"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACBzZWNyZXRzZWNyZXRzZWNyZXRzZWNyZXRzZWNyZXQAAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----"
)

AGENT_LOG = f"""\
$ export ANTHROPIC_API_KEY={ANTHROPIC}
curl -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0cmlhbCJ9.c2lnbmF0dXJl" https://api.example.test/v1
OPENAI_API_KEY={OPENAI} git push https://x-access-token:{GITHUB}@github.com/o/r
also {GITHUB_PAT} and aws {AWS} and slack {SLACK}
{PRIVATE_KEY}
db password is hunter2-correct-horse, again: hunter2-correct-horse
commit 3d6a939f0c1e2b4a5d6c7e8f9a0b1c2d3e4f5a6b touched sk-learn tests and the task-runner
"""


def test_redacts_every_token_shape_and_secret_values():
    text, count = redact(AGENT_LOG, ["hunter2-correct-horse"])
    for leaked in (ANTHROPIC, OPENAI, GITHUB, GITHUB_PAT, AWS, SLACK, "hunter2-correct-horse",
                   "eyJhbGciOiJIUzI1NiJ9", "BEGIN OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXkt"):
        assert leaked not in text
    # 6 token shapes + bearer + private key block + 2 secret occurrences
    assert count == 10
    assert "Authorization: Bearer [REDACTED]" in text
    assert f"ANTHROPIC_API_KEY={REDACTED}" in text


def test_leaves_ordinary_text_alone():
    line = "commit 3d6a939f0c1e2b4a5d6c7e8f9a0b1c2d3e4f5a6b touched sk-learn tests and the task-runner\n"
    assert redact(line, []) == (line, 0)
    assert redact("the Bearer of bad news", []) == ("the Bearer of bad news", 0)


def test_short_and_empty_secrets_are_ignored():
    text = "pin 123 and id abc in the text"
    assert redact(text, ["", "123", "abc"]) == (text, 0)
    assert redact(text, ["1234", "pin 123"]) == ("[REDACTED] and id abc in the text", 1)


def test_longest_secret_wins_when_one_contains_another():
    text, count = redact("token=supersecretvalue", ["supersecret", "supersecretvalue"])
    assert (text, count) == ("token=[REDACTED]", 1)


def test_secret_with_regex_metacharacters_is_literal():
    assert redact("pw a.b*c+d? and axbbbcd", ["a.b*c+d?"]) == ("pw [REDACTED] and axbbbcd", 1)


def test_redact_file_in_place_without_truncation(tmp_path):
    path = tmp_path / "stdout.txt"
    path.write_text(AGENT_LOG)
    assert redact_file(path, ["hunter2-correct-horse"], limit_bytes=1_000_000) == (False, 10)
    assert path.read_text() == redact(AGENT_LOG, ["hunter2-correct-horse"])[0]
    assert list(tmp_path.iterdir()) == [path]  # no temp file left behind


def test_redact_file_missing_is_a_no_op(tmp_path):
    assert redact_file(tmp_path / "nope", ["secret"], 10) == (False, 0)


def test_redact_file_keeps_invalid_bytes_and_crlf(tmp_path):
    path = tmp_path / "bin.txt"
    raw = b"\xff\xfe ok\r\nkey=" + AWS.encode() + b"\r\n\x00\x80 done\r\n"
    path.write_bytes(raw)
    assert redact_file(path, [], limit_bytes=10_000) == (False, 1)
    assert path.read_bytes() == raw.replace(AWS.encode(), REDACTED.encode())


def test_truncation_keeps_head_and_tail_at_line_breaks(tmp_path):
    path = tmp_path / "big.txt"
    lines = [f"line {i:07d} {'x' * 40}\n" for i in range(60_000)]  # 54 bytes each, ~3.2 MB
    lines[3] = f"head secret {GITHUB}\n"
    lines[30_000] = f"middle secret {GITHUB}\n"
    lines[-2] = "tail secret hunter2-correct-horse\n"
    path.write_text("".join(lines))
    truncated, count = redact_file(path, ["hunter2-correct-horse"], limit_bytes=100_000)
    assert truncated is True
    assert count == 2  # the middle one is dropped, not counted
    out_lines = path.read_text().splitlines(keepends=True)
    marker = next(i for i, line in enumerate(out_lines) if line.startswith("[... trialhouse: "))
    head, tail = out_lines[:marker], out_lines[marker + 1 :]
    def redacted(part):
        return [redact(line, ["hunter2-correct-horse"])[0] for line in part]

    assert head == redacted(lines[: len(head)])  # whole lines from the start
    assert tail == redacted(lines[len(lines) - len(tail) :])  # whole lines up to the end
    dropped = sum(len(line) for line in lines[len(head) : len(lines) - len(tail)])
    assert out_lines[marker] == f"[... trialhouse: {dropped} bytes truncated ...]\n"
    assert 45_000 < sum(len(x) for x in head) <= 50_000 and 45_000 < sum(len(x) for x in tail) <= 50_000
    assert GITHUB not in "".join(out_lines) and "hunter2-correct-horse" not in "".join(out_lines)


def test_truncation_of_a_single_huge_line(tmp_path):
    path = tmp_path / "oneline.txt"
    path.write_bytes(b"a" * 500_000)
    assert redact_file(path, [], limit_bytes=1000) == (True, 0)
    out = path.read_bytes()
    assert out == b"a" * 500 + b"\n[... trialhouse: 499000 bytes truncated ...]\n" + b"a" * 500


def test_streams_large_files_without_loading_them(tmp_path):
    path = tmp_path / "huge.txt"
    block = ("agent output line with nothing secret in it at all, just words\n" * 1000).encode()
    with open(path, "wb") as f:
        for i in range(250):  # ~16 MB
            f.write(block)
            if i % 100 == 0:
                f.write(f"leaked {SLACK}\n".encode())
    size = path.stat().st_size
    tracemalloc.start()
    try:
        truncated, count = redact_file(path, ["not-present-secret"], limit_bytes=size + 1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (truncated, count) == (False, 3)
    assert peak < 10 * 1024 * 1024  # well under the 16 MB file: it was streamed
    assert path.stat().st_size == size - 3 * (len(SLACK) - len(REDACTED))


FRAGMENTS = st.sampled_from(
    ["plain words ", "\n", " ", "x", "sk-", GITHUB, AWS, "Bearer ", "abcdefghijklmnop", "hunter22",
     "ünïcødé ", "hunter", "22", SLACK, "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----"]
)


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(FRAGMENTS, max_size=60))
def test_chunked_streaming_matches_whole_text(tmp_path_factory, parts):
    """With tiny chunks, a match split across chunk boundaries is still found exactly once."""
    text = "".join(parts)
    path = tmp_path_factory.mktemp("h") / "out.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(redact_mod, "_CHUNK_CHARS", 7)
        mp.setattr(redact_mod, "_OVERLAP_CHARS", 100)
        mp.setattr(redact_mod, "_MAX_TOKEN_CHARS", 40)
        truncated, count = redact_file(path, ["hunter22"], limit_bytes=10**9)
        expected, expected_count = redact(text, ["hunter22"])
    assert not truncated
    assert (path.read_text(encoding="utf-8"), count) == (expected, expected_count)
