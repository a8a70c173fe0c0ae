"""msgspec's "(byte N)" reads like a NUL byte: every JSON error a user sees
says "at offset N" (and "not JSON" when nothing at all decodes)."""

from __future__ import annotations

import msgspec
import pytest

from perftriage.core.json_errors import decode_error_text


def _error(text: bytes) -> msgspec.DecodeError:
    with pytest.raises(msgspec.DecodeError) as err:
        msgspec.json.decode(text)
    return err.value


@pytest.mark.parametrize(("text", "says"), [
    (b"# README\n", "not JSON: invalid character at offset 0"),
    (b'{"a": x}', "JSON is malformed: invalid character at offset 6"),
    (b'{"a": 1', "Input data was truncated"),
])
def test_offsets_never_read_as_bytes(text: bytes, says: str) -> None:
    got = decode_error_text(_error(text))
    assert got == says and "byte" not in got


def test_too_deep_is_said_so() -> None:
    assert decode_error_text(RecursionError()) == "JSON nested too deeply"
