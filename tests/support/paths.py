"""Where tests find the project and their data."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
TEST_DATA = ROOT / "tests" / "data"
EXCEPTION_EMAILS = TEST_DATA / "exception-emails"
SHARED_DATA = ROOT.parent / "shared" / "data"  # ../shared/data, beside the checkout (CI has it)
