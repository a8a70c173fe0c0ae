"""A form's validation: the parser's own reason, or nothing."""

from perftriage.core.clock import parse_time
from perftriage.core.refusals import refusal
from perftriage.core.search import pattern_error


def test_a_refused_value_says_the_parsers_reason_and_a_taken_one_nothing():
    assert refusal(parse_time, "1:75") == "'1:75': minutes and seconds must be below 60"
    assert refusal(parse_time, "1:15") is None
    assert pattern_error("(unclosed") is not None and pattern_error("err|warn") is None


def test_only_a_value_error_is_a_refusal():
    def broken(text: str) -> None:
        raise KeyError(text)  # a bug in a parser is not a reason to show

    try:
        refusal(broken, "x")
    except KeyError:
        pass
    else:
        raise AssertionError("a KeyError was taken for a refusal")
