"""Helpers of the damaged-input property tests (tests/discovery/test_robustness.py,
tests/robustness/test_input_fuzz.py)."""


def token_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each run of non-space characters of ``text``, in order."""
    spans, start = [], None
    for i, char in enumerate(text + " "):
        if char.isspace():
            if start is not None:
                spans.append((start, i))
                start = None
        elif start is None:
            start = i
    return spans
