"""Search: scope rules, limits, record types, graph hops, invalid records, budgets, formatting."""

from __future__ import annotations

import math
from typing import Any

import pytest
from palimpsest.adapters import HashingEmbedder
from palimpsest.application import (
    AgentMemory,
    OracleSearchResultFormatConfig,
    RetrievalConfig,
    SearchResult,
    SearchResultFormatConfig,
    SearchScope,
)
from palimpsest.domain import (
    InvalidRecordTypeError,
    InvalidScopeError,
    InvalidSearchError,
    RecordStatus,
    RecordType,
    ValidationError,
)

from .conftest import ClientFactory
from .helpers import ARGUMENT_CHECK

Q = "pizza"


def _ids(results: list[SearchResult]) -> set[str]:
    return {r.id for r in results}


@pytest.fixture
def scoped(memory: AgentMemory) -> AgentMemory:
    """Pizza memories in every scope combination, and pizza messages in two threads."""
    memory.create_thread(thread_id="t1", user_id="u", agent_id="a")
    memory.create_thread(thread_id="t2", user_id="u", agent_id="a")
    memory.create_thread(thread_id="t3", user_id="u", agent_id="b")
    memory.add_memory("pizza: unscoped", memory_id="none")
    memory.add_memory("pizza: user u", memory_id="u", user_id="u")
    memory.add_memory("pizza: user u agent a", memory_id="ua", user_id="u", agent_id="a")
    memory.add_memory("pizza: user u agent b", memory_id="ub", user_id="u", agent_id="b")
    memory.add_memory("pizza: user u agent a thread t1", memory_id="ua1", user_id="u", agent_id="a", thread_id="t1")
    memory.add_memory("pizza: user u agent a thread t2", memory_id="ua2", user_id="u", agent_id="a", thread_id="t2")
    memory.add_memory("pizza: user v", memory_id="v", user_id="v")
    memory.get_thread("t1").add_messages([{"id": "msg1", "role": "user", "content": "pizza in thread one"}])
    memory.get_thread("t2").add_messages([{"id": "msg2", "role": "user", "content": "pizza in thread two"}])
    return memory


# -- scope -----------------------------------------------------------------------------------


def test_a_client_search_must_name_its_user(scoped: AgentMemory) -> None:
    with pytest.raises(ValidationError, match="user"):
        scoped.search(Q)
    with pytest.raises(ValidationError, match="user"):
        scoped.search(Q, agent_id="a")
    with pytest.raises(ValidationError, match="exact user"):
        scoped.search(Q, user_id="u", exact_user_match=False)


def test_a_user_search_sees_every_agent_and_thread_of_that_user(scoped: AgentMemory) -> None:
    assert _ids(scoped.search(Q, user_id="u", max_results=50)) == {"u", "ua", "ub", "ua1", "ua2", "msg1", "msg2"}


def test_user_id_none_sees_only_records_without_a_user(scoped: AgentMemory) -> None:
    assert _ids(scoped.search(Q, user_id=None, max_results=50)) == {"none"}


def test_an_agent_id_narrows_exactly(scoped: AgentMemory) -> None:
    assert _ids(scoped.search(Q, user_id="u", agent_id="a", max_results=50)) == {"ua", "ua1", "ua2", "msg1", "msg2"}
    assert _ids(scoped.search(Q, user_id="u", agent_id=None, max_results=50)) == {"u"}


def test_a_thread_id_narrows_only_with_exact_thread_match(scoped: AgentMemory) -> None:
    loose = scoped.search(Q, user_id="u", agent_id="a", thread_id="t1", max_results=50)
    assert _ids(loose) == {"ua", "ua1", "ua2", "msg1", "msg2"}
    exact = scoped.search(Q, user_id="u", thread_id="t1", exact_thread_match=True, max_results=50)
    assert _ids(exact) == {"ua1", "msg1"}
    none_thread = scoped.search(Q, user_id="u", agent_id="a", thread_id=None, exact_thread_match=True, max_results=50)
    assert _ids(none_thread) == {"ua"}


def test_an_explicit_search_scope_is_the_same_as_explicit_ids(scoped: AgentMemory) -> None:
    by_scope = scoped.search(Q, scope=SearchScope(user_id="u", agent_id="a"), max_results=50)
    assert _ids(by_scope) == _ids(scoped.search(Q, user_id="u", agent_id="a", max_results=50))
    exact = scoped.search(Q, scope=SearchScope(user_id="u", thread_id="t2", exact_thread_match=True), max_results=50)
    assert _ids(exact) == {"ua2", "msg2"}
    with pytest.raises(ValidationError, match="user"):
        scoped.search(Q, scope=SearchScope(agent_id="a"))


@ARGUMENT_CHECK
@pytest.mark.parametrize(
    "explicit", [{"user_id": "u"}, {"agent_id": "a"}, {"thread_id": "t1"}, {"exact_thread_match": True}]
)
def test_scope_and_explicit_ids_are_exclusive(scoped: AgentMemory, explicit: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="either 'scope' or explicit"):
        scoped.search(Q, scope=SearchScope(user_id="u"), **explicit)  # type: ignore[arg-type]


@ARGUMENT_CHECK
def test_a_scope_object_must_be_a_search_scope(scoped: AgentMemory) -> None:
    with pytest.raises(ValidationError):
        scoped.search(Q, scope={"user_id": "u"})  # type: ignore[arg-type]


def test_a_thread_search_defaults_to_its_user_and_agent_across_their_threads(scoped: AgentMemory) -> None:
    thread = scoped.get_thread("t1")
    assert _ids(thread.search(Q, max_results=50)) == {"ua", "ua1", "ua2", "msg1", "msg2"}
    assert _ids(thread.search(Q, exact_thread_match=True, max_results=50)) == {"ua1", "msg1"}
    assert _ids(scoped.get_thread("t3").search(Q, max_results=50)) == {"ub"}
    assert _ids(thread.search(Q, scope=SearchScope(agent_id="b"), max_results=50)) == {"ub"}


@pytest.mark.parametrize(
    "widening",
    [
        {"exact_user_match": False},
        {"user_id": "v"},
        {"user_id": None},
        {"user_id": "v", "exact_user_match": True},
        {"scope": SearchScope(user_id="v")},
        {"scope": SearchScope(user_id=None)},
        {"scope": SearchScope(exact_user_match=False)},
        {"scope": SearchScope(user_id="u", exact_user_match=False)},
    ],
)
def test_a_thread_search_never_reads_outside_its_user(scoped: AgentMemory, widening: dict[str, object]) -> None:
    thread = scoped.get_thread("t1")
    with pytest.raises(InvalidScopeError, match="thread"):
        thread.search(Q, max_results=50, **widening)  # type: ignore[arg-type]


def test_a_thread_search_scope_without_a_user_means_the_thread_s_user(scoped: AgentMemory) -> None:
    thread = scoped.get_thread("t1")
    assert _ids(thread.search(Q, scope=SearchScope(), max_results=50)) == {"u", "ua", "ub", "ua1", "ua2", "msg1", "msg2"}
    assert _ids(thread.search(Q, scope=SearchScope(user_id="u", agent_id="a"), max_results=50)) == {
        "ua", "ua1", "ua2", "msg1", "msg2"
    }
    assert _ids(thread.search(Q, user_id="u", exact_agent_match=False, max_results=50)) == {
        "u", "ua", "ub", "ua1", "ua2", "msg1", "msg2"
    }


def test_a_thread_without_a_user_searches_the_unscoped_records_only(scoped: AgentMemory) -> None:
    thread = scoped.create_thread(thread_id="anonymous")
    assert _ids(thread.search(Q, exact_agent_match=False, max_results=50)) == {"none"}
    assert _ids(thread.search(Q, scope=SearchScope(), max_results=50)) == {"none"}
    with pytest.raises(InvalidScopeError):
        thread.search(Q, user_id="u")


# -- limits and types ------------------------------------------------------------------------


@ARGUMENT_CHECK
@pytest.mark.parametrize("bad", [0, -1, 1001, 2.5, True, "10"])
def test_max_results_must_be_between_1_and_1000(scoped: AgentMemory, bad: object) -> None:
    with pytest.raises(InvalidSearchError):
        scoped.search(Q, user_id="u", max_results=bad)  # type: ignore[arg-type]


def test_max_results_caps_the_number_of_results(scoped: AgentMemory) -> None:
    assert len(scoped.search(Q, user_id="u", max_results=1)) == 1
    assert len(scoped.search(Q, user_id="u", max_results=1000)) == 7
    assert len(scoped.search(Q, user_id="u")) == 7


@ARGUMENT_CHECK
@pytest.mark.parametrize("query", ["", "   ", None, 5])
def test_the_query_must_be_a_non_empty_string(scoped: AgentMemory, query: object) -> None:
    with pytest.raises(InvalidSearchError, match="query"):
        scoped.search(query, user_id="u")  # type: ignore[arg-type]


def test_record_types_restrict_the_results(scoped: AgentMemory) -> None:
    assert _ids(scoped.search(Q, user_id="u", record_types=["message"], max_results=50)) == {"msg1", "msg2"}
    scoped.add_memory("pizza fact", memory_id="f", memory_type="fact", user_id="u")
    assert _ids(scoped.search(Q, user_id="u", record_types=["fact"], max_results=50)) == {"f"}
    assert _ids(scoped.search(Q, user_id="u", record_types=("fact", "message"), max_results=50)) == {"f", "msg1", "msg2"}


@ARGUMENT_CHECK
@pytest.mark.parametrize("bad", [[1], ["memory", None], [RecordType.FACT, 2]])
def test_record_types_entries_must_be_strings(scoped: AgentMemory, bad: list[object]) -> None:
    with pytest.raises(ValidationError, match="strings"):
        scoped.search(Q, user_id="u", record_types=bad)  # type: ignore[arg-type]


@ARGUMENT_CHECK
def test_record_types_must_be_known_names_in_a_list(scoped: AgentMemory) -> None:
    with pytest.raises(InvalidRecordTypeError):
        scoped.search(Q, user_id="u", record_types=["document"])
    with pytest.raises(ValidationError):
        scoped.search(Q, user_id="u", record_types="memory")
    with pytest.raises(ValidationError):
        scoped.search(Q, user_id="u", record_types=[])


def test_the_metadata_filter_must_be_a_dict_or_none(scoped: AgentMemory) -> None:
    scoped.add_memory("pizza tagged", memory_id="tagged", user_id="u", metadata={"tags": ["food", "it"]})
    assert _ids(scoped.search(Q, user_id="u", metadata_filter={"tags": {"$array_contains": "food"}})) == {"tagged"}
    assert len(scoped.search(Q, user_id="u", metadata_filter=None, max_results=50)) == 8
    with pytest.raises(ValidationError, match="metadata_filter"):
        scoped.search(Q, user_id="u", metadata_filter=[("a", 1)])  # type: ignore[arg-type]


# -- graph hops and invalid records ----------------------------------------------------------


@pytest.fixture
def chain(make_client: ClientFactory) -> AgentMemory:
    """root -supersedes-> mid -refines-> leaf, plus an unrelated memory; searched in plain
    similarity order (``current_first`` off), so an old memory's own words find it first."""
    memory = make_client(retrieval=RetrievalConfig(current_first=False))
    memory.add_memory("alpha root memory", memory_id="root", user_id="u")
    memory.add_memory("beta middle memory", memory_id="mid", user_id="u")
    memory.add_memory("gamma leaf memory", memory_id="leaf", user_id="u")
    memory.link_records("root", "memory", "mid", "memory", "supersedes")
    memory.link_records("mid", "memory", "leaf", "memory", "refines")
    return memory


def _tree(result: SearchResult) -> list[tuple[int, str, str]]:
    out: list[tuple[int, str, str]] = []

    def walk(node: SearchResult, depth: int) -> None:
        for link, child in node.linked_results:
            label = link.relation_type if link.source_id == node.id else link.opposite_relation_type
            out.append((depth, label, child.id))
            walk(child, depth + 1)

    walk(result, 1)
    return out


def test_num_hops_attaches_the_linked_records_as_a_tree(chain: AgentMemory) -> None:
    [root] = chain.search("alpha root", user_id="u", max_results=1, num_hops=2)
    assert root.id == "root"
    assert _tree(root) == [(1, "supersedes", "mid"), (2, "refines", "leaf")]
    [one_hop] = chain.search("alpha root", user_id="u", max_results=1, num_hops=1)
    assert _tree(one_hop) == [(1, "supersedes", "mid")]
    [flat] = chain.search("alpha root", user_id="u", max_results=1)
    assert flat.linked_results == []


def test_linked_labels_are_read_from_the_parent_side(chain: AgentMemory) -> None:
    [leaf] = chain.search("gamma leaf", user_id="u", max_results=1, num_hops=2)
    assert _tree(leaf) == [(1, "is_refined_by", "mid"), (2, "is_superseded_by", "root")]


def test_max_linked_results_caps_the_tree(chain: AgentMemory) -> None:
    [root] = chain.search("alpha root", user_id="u", max_results=1, num_hops=2, max_linked_results=1)
    assert _tree(root) == [(1, "supersedes", "mid")]
    [bare] = chain.search("alpha root", user_id="u", max_results=1, num_hops=2, max_linked_results=0)
    assert bare.linked_results == []


@ARGUMENT_CHECK
@pytest.mark.parametrize(("field", "bad"), [("num_hops", 6), ("num_hops", -1), ("max_linked_results", -1)])
def test_graph_limits_are_validated(chain: AgentMemory, field: str, bad: int) -> None:
    with pytest.raises(InvalidSearchError):
        chain.search("alpha", user_id="u", **{field: bad})  # type: ignore[arg-type]


def test_include_invalid_results_false_drops_invalid_direct_hits_only(chain: AgentMemory) -> None:
    everything = chain.search("memory", user_id="u", max_results=10)
    assert _ids(everything) == {"root", "mid", "leaf"}
    assert {r.id: r.status for r in everything}["mid"] is RecordStatus.INVALID
    valid_only = chain.search("memory", user_id="u", max_results=10, num_hops=2, include_invalid_results=False)
    assert _ids(valid_only) == {"root"}
    assert [child.id for _, child in valid_only[0].linked_results] == ["mid"], "linked history stays"
    with pytest.raises(ValidationError):
        chain.search("memory", user_id="u", include_invalid_results="no")  # type: ignore[arg-type]


def test_hidden_invalid_content_keeps_the_path_to_a_valid_record_and_drops_invalid_only_branches(
    memory: AgentMemory,
) -> None:
    memory.add_memory("omega direct hit", memory_id="X", user_id="u")
    memory.add_memory("first retired text", memory_id="I1", user_id="u")
    memory.add_memory("second retired text", memory_id="I2", user_id="u")
    memory.add_memory("still valid text", memory_id="V", user_id="u")
    memory.link_records("X", "memory", "I1", "memory", "supersedes")
    memory.link_records("X", "memory", "I2", "memory", "supersedes")
    memory.link_records("V", "memory", "I1", "memory", "supports")
    [hit] = memory.search("omega direct hit", user_id="u", max_results=1, num_hops=2, include_invalid_results=False)
    assert hit.id == "X"
    text = hit.formatted_content
    assert "<record_id>I1</record_id>" in text and "first retired text" not in text
    assert "<status>invalid</status>" in text and "<relation_type>supersedes</relation_type>" in text
    assert "<relation_type>is_supported_by</relation_type>" in text and "still valid text" in text
    assert "I2" not in text and "second retired text" not in text
    shown = hit.format_content(SearchResultFormatConfig(include_invalid_results=True))
    assert "first retired text" in shown and "second retired text" in shown


def test_a_direct_invalid_hit_keeps_its_id_and_status_but_loses_its_content_when_hidden(chain: AgentMemory) -> None:
    [mid] = chain.search("beta middle", user_id="u", max_results=1)
    assert mid.id == "mid" and "beta middle memory" in mid.formatted_content
    hidden = mid.format_content(SearchResultFormatConfig(include_invalid_results=False))
    assert "<record_id>mid</record_id>" in hidden and "<status>invalid</status>" in hidden
    assert "beta middle memory" not in hidden


# -- formatting ------------------------------------------------------------------------------


def test_format_content_options_show_and_hide_fields(memory: AgentMemory) -> None:
    memory.create_thread(thread_id="t", user_id="u", agent_id="a").add_messages(
        [{"id": "m", "role": "user", "content": "pizza talk", "timestamp": "2026-01-02T00:00:00Z", "metadata": {"src": "chat"}}]
    )
    [result] = memory.search("pizza talk", user_id="u", max_results=1)
    default = result.formatted_content
    assert default.splitlines() == [
        "<message>",
        "  <record_id>m</record_id>",
        "  <timestamp>2026-01-02T00:00:00+00:00</timestamp>",
        "  <role>user</role>",
        "  <status>valid</status>",
        "  <content>pizza talk</content>",
        "</message>",
    ]
    assert str(result) == default == result.format_content()
    everything = result.format_content(
        OracleSearchResultFormatConfig(
            show_thread_id=True, show_distance=True, show_user_id=True, show_agent_id=True, show_metadata=True
        )
    )
    for line in ("<thread_id>t</thread_id>", "<user_id>u</user_id>", "<agent_id>a</agent_id>", '<src>chat</src>'):
        assert line in everything
    relevance = float(everything.split("<estimated_relevance>")[1].split("<")[0])
    assert math.isclose(relevance, 1.0 - result.distance, rel_tol=1e-5)
    compact = result.format_content(
        SearchResultFormatConfig(show_timestamp=False, show_role=False, show_status=False)
    )
    assert compact.splitlines() == ["<message>", "  <record_id>m</record_id>", "  <content>pizza talk</content>", "</message>"]


def test_the_oracle_named_format_config_is_the_same_class() -> None:
    assert OracleSearchResultFormatConfig is SearchResultFormatConfig


@ARGUMENT_CHECK
def test_format_config_values_are_validated(memory: AgentMemory) -> None:
    memory.add_memory("x", user_id="u")
    [result] = memory.search("x", user_id="u")
    with pytest.raises(ValidationError):
        SearchResultFormatConfig(show_role="yes")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="format_config"):
        result.format_content({"show_role": False})  # type: ignore[arg-type]


def test_results_expose_record_data(memory: AgentMemory) -> None:
    memory.add_memory("the user likes basil", memory_id="b", memory_type="preference", user_id="u", metadata={"k": 1})
    [result] = memory.search("basil", user_id="u")
    assert (result.id, result.record_type, result.content, result.status) == (
        "b",
        RecordType.PREFERENCE,
        "the user likes basil",
        RecordStatus.VALID,
    )
    assert result.metadata == {"k": 1} and result.record.id == "b"
    assert result.relevance >= -1.0 and not math.isnan(result.distance)


# -- token budgets ---------------------------------------------------------------------------


@pytest.fixture
def budgeted(memory: AgentMemory) -> tuple[AgentMemory, list[int]]:
    for i, size in enumerate((40, 300, 80)):
        memory.add_memory(f"budget item {i} " + "x" * size, memory_id=f"b{i}", user_id="u")
    results = memory.search("budget item", user_id="u", record_types=["memory"])
    costs = [math.ceil(len(r.formatted_content) / 3.5) for r in results]
    return memory, costs


@pytest.mark.filterwarnings("ignore:token_budget below 1000")
def test_a_hard_budget_keeps_whole_results_while_they_fit(budgeted: tuple[AgentMemory, list[int]]) -> None:
    memory, costs = budgeted
    def search(**kw: Any) -> list[Any]:
        return memory.search("budget item", user_id="u", record_types=["memory"], **kw)

    assert len(search(token_budget=costs[0] - 1)) == 0, "the first result does not fit: nothing"
    assert len(search(token_budget=costs[0])) == 1
    assert len(search(token_budget=costs[0] + costs[1] - 1)) == 1
    assert len(search(token_budget=costs[0] + costs[1])) == 2
    assert len(search(token_budget=0)) == 3, "non-positive disables"
    assert len(search(token_budget=None)) == 3


def test_a_soft_budget_includes_the_result_that_reaches_it(budgeted: tuple[AgentMemory, list[int]]) -> None:
    memory, costs = budgeted
    def search(**kw: Any) -> list[Any]:
        return memory.search("budget item", user_id="u", record_types=["memory"], **kw)

    assert len(search(soft_token_budget=1)) == 1
    assert len(search(soft_token_budget=costs[0])) == 1
    assert len(search(soft_token_budget=costs[0] + 1)) == 2
    assert len(search(soft_token_budget=-5)) == 3


@ARGUMENT_CHECK
def test_token_budgets_must_be_integers(budgeted: tuple[AgentMemory, list[int]]) -> None:
    memory, _ = budgeted
    with pytest.raises(ValidationError):
        memory.search("budget", user_id="u", token_budget="100")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        memory.search("budget", user_id="u", soft_token_budget=1.5)  # type: ignore[arg-type]


# -- strategies ------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["keyword", "vector", "hybrid"])
def test_every_search_strategy_finds_the_matching_memory(make_client: ClientFactory, strategy: str) -> None:
    client = make_client(search_strategy=strategy)
    client.add_memory("the user prefers sourdough pizza", memory_id="p", user_id="u")
    client.add_memory("quarterly tax filing deadline", memory_id="t", user_id="u")
    assert client.search("sourdough pizza", user_id="u")[0].id == "p"


class _CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the query texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed(self, texts, *, is_query=False):  # type: ignore[no-untyped-def,override]
        if is_query:
            self.queries.extend(texts)
        return super().embed(texts, is_query=is_query)


def test_a_query_embedded_lately_is_not_embedded_again(make_client) -> None:  # type: ignore[no-untyped-def]
    from palimpsest.application.searching import RECENT_QUERIES

    embedder = _CountingEmbedder()
    client = make_client(embedder=embedder)
    thread = client.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": "I keep bees on the roof."}])
    first = client.search("bees on the roof", user_id="u")
    again = client.search("bees on the roof", user_id="u")
    assert embedder.queries == ["bees on the roof"]
    assert [(r.id, r.relevance) for r in first] == [(r.id, r.relevance) for r in again]
    for i in range(RECENT_QUERIES):  # the oldest query leaves the bounded cache
        client.search(f"query {i}", user_id="u")
    client.search("bees on the roof", user_id="u")
    assert embedder.queries.count("bees on the roof") == 2
