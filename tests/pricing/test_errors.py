"""The pricing package's errors: what an input error says, and which store errors can heal."""

from __future__ import annotations

from pathlib import Path

from spotwise.pricing.errors import InputError, PricingError, StoreBehind, StoreError, first_line


def test_an_input_error_reads_source_where_problem_then_hint() -> None:
    error = InputError(
        Path("data/prices.csv"), "line 500", "price -1.0 is negative", "Fix or drop the row."
    )
    assert str(error) == "data/prices.csv: line 500: price -1.0 is negative. Fix or drop the row."
    assert (error.source, error.where) == ("data/prices.csv", "line 500")
    assert isinstance(error.source, str)


def test_an_input_error_of_a_whole_file_names_no_place_in_it() -> None:
    error = InputError("trace.json", "", "not JSON", "Give a CBL trace.")
    assert str(error) == "trace.json: not JSON. Give a CBL trace."


def test_a_store_error_may_heal_unless_it_says_it_is_permanent() -> None:
    assert StoreError("the store is held by another process").permanent is False
    assert StoreError("a newer schema", permanent=True).permanent is True
    behind = StoreBehind("tables older than this code")
    # whoever catches StoreError (or any pricing error) catches a store that is behind too
    assert isinstance(behind, StoreError) and isinstance(behind, PricingError)
    assert behind.permanent is False and str(behind) == "tables older than this code"


def test_first_line_is_what_a_driver_said_first_or_its_repr_when_it_said_nothing() -> None:
    assert first_line(OSError("disk full\nat offset 4096")) == "disk full"
    assert first_line(ValueError("  \n")) == "ValueError('  \\n')"
