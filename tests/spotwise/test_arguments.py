"""The flag-value parsers the commands share."""

from __future__ import annotations

from spotwise.arguments import comma_list


def test_a_comma_list_keeps_the_non_empty_items_stripped_and_in_order() -> None:
    assert comma_list(" greedy, ,best ,greedy,") == ["greedy", "best", "greedy"]
    assert comma_list("p3.2xlarge") == ["p3.2xlarge"]
    assert comma_list(None) == [] and comma_list("") == [] and comma_list(" , ") == []
