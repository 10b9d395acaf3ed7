"""Suite-wide test settings: hypothesis runs derandomized (the same examples on every run), so CI is
deterministic; a failing example is printed with its reproduction blob."""

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("ci")
