"""Tests of OpenAIEmbedder against the scripted local server: normalisation, order, batching, dimension, retries."""

from __future__ import annotations

import math
import socket
import traceback
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("openai", reason="the OpenAI-compatible adapters need the 'openai' extra (pip install '.[openai]')")

import openai
from fake_openai_server import EMBEDDINGS, embedding_answer, error
from palimpsest.adapters import open_memory
from palimpsest.adapters.openai import ModelUnavailableError, OpenAIEmbedder
from palimpsest.application.ports import Embedder
from palimpsest.domain.errors import ArgumentTypeError, ConfigurationError


def test_vectors_come_back_unit_length_in_input_order_whatever_order_the_server_uses(server, client, sleeps) -> None:
    server.embeddings(embedding_answer([[3.0, 4.0], [0.0, 2.0], [1.0, 1.0]], order=[2, 0, 1]))
    embedder = OpenAIEmbedder(client, "text-embedder", dimension=2, sleep=sleeps)

    vectors = embedder.embed(["a", "b", "c"])

    assert vectors[0] == pytest.approx([0.6, 0.8]) and vectors[1] == pytest.approx([0.0, 1.0])
    assert vectors[2] == pytest.approx([math.sqrt(0.5), math.sqrt(0.5)])
    assert all(math.isclose(math.hypot(*v), 1.0) for v in vectors)
    assert isinstance(embedder, Embedder)
    assert embedder.model_id == "text-embedder@2"
    [request] = server.requests_to(EMBEDDINGS)
    assert request["input"] == ["a", "b", "c"] and request["model"] == "text-embedder"
    assert "dimensions" not in request


def test_texts_are_sent_in_batches_of_the_configured_size(server, client, sleeps) -> None:
    server.embeddings(
        embedding_answer([[1.0, 0.0], [0.0, 1.0]]),
        embedding_answer([[1.0, 1.0], [2.0, 0.0]]),
        embedding_answer([[0.0, 5.0]]),
    )
    embedder = OpenAIEmbedder(client, "text-embedder", dimension=2, batch_size=2, sleep=sleeps)

    vectors = embedder.embed(["t1", "t2", "t3", "t4", "t5"])

    assert len(vectors) == 5 and vectors[4] == pytest.approx([0.0, 1.0])
    assert [r["input"] for r in server.requests_to(EMBEDDINGS)] == [["t1", "t2"], ["t3", "t4"], ["t5"]]
    assert embedder.usage.for_operation("embed").calls == 3


def test_the_dimension_is_learned_from_one_probe_when_not_given(server, client, sleeps) -> None:
    server.embeddings(embedding_answer([[1.0, 2.0, 2.0]]))
    embedder = OpenAIEmbedder(client, "text-embedder", sleep=sleeps)

    assert embedder.dimension == 3 and embedder.model_id == "text-embedder@3"
    assert len(server.requests_to(EMBEDDINGS)) == 1


def test_a_vector_of_the_wrong_length_is_a_configuration_error(server, client, sleeps) -> None:
    server.embeddings(embedding_answer([[1.0, 2.0, 2.0]]))
    embedder = OpenAIEmbedder(client, "text-embedder", dimension=4, sleep=sleeps)

    with pytest.raises(ConfigurationError, match="3-d"):
        embedder.embed(["x"])


def test_the_requested_dimension_and_the_query_prefix_are_sent(server, client, sleeps) -> None:
    server.embeddings(embedding_answer([[1.0, 0.0]]), embedding_answer([[0.0, 1.0]]))
    embedder = OpenAIEmbedder(
        client, "text-embedder", dimension=2, request_dimension=True, query_prefix="query: ",
        document_prefix="passage: ", sleep=sleeps,
    )

    embedder.embed(["where"], is_query=True)
    embedder.embed(["there"])

    query, document = server.requests_to(EMBEDDINGS)
    assert query["input"] == ["query: where"] and query["dimensions"] == 2
    assert document["input"] == ["passage: there"]


def test_no_texts_means_no_request_and_a_single_string_is_refused(server, client, sleeps) -> None:
    embedder = OpenAIEmbedder(client, "text-embedder", dimension=2, sleep=sleeps)

    assert embedder.embed([]) == []
    with pytest.raises(ArgumentTypeError):
        embedder.embed("one string")  # type: ignore[arg-type]
    assert server.requests_to(EMBEDDINGS) == []


def test_embedding_requests_are_retried_on_rate_limits_and_give_up_after_the_budget(server, client, sleeps) -> None:
    server.embeddings(error(429), embedding_answer([[1.0, 0.0]]), error(500), error(500))
    embedder = OpenAIEmbedder(client, "text-embedder", dimension=2, max_retries=1, sleep=sleeps)

    assert embedder.embed(["x"]) == [pytest.approx([1.0, 0.0])]
    with pytest.raises(ModelUnavailableError):
        embedder.embed(["y"])
    assert len(server.requests_to(EMBEDDINGS)) == 4 and len(sleeps.delays) == 2


def test_the_embedder_waits_as_long_as_a_rate_limit_asks(server, client, sleeps) -> None:
    limited = error(429, "slow down")
    limited.headers["Retry-After"] = "2"
    server.embeddings(limited, embedding_answer([[1.0, 0.0]]))
    embedder = OpenAIEmbedder(client, "text-embedder", dimension=2, sleep=sleeps)

    assert embedder.embed(["a"]) == [[1.0, 0.0]]
    assert sleeps.delays == [2.0]


# -- opening a client: no model server needed when the vector size is known -------------------


@pytest.fixture
def down(server) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    """An SDK client pointed at a loopback port nobody listens on: the model server is down."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: every connection is refused
        sdk_client = openai.OpenAI(base_url=f"http://127.0.0.1:{closed.getsockname()[1]}/v1", api_key="k")
        yield sdk_client
        sdk_client.close()


def test_a_client_opens_with_the_server_down_when_the_dimension_is_given(down, sleeps, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with open_memory(tmp_path / "m.db", embedder=OpenAIEmbedder(down, "text-embedder", dimension=3, sleep=sleeps)):
        pass
    assert sleeps.delays == []  # not one request was tried


def test_with_the_server_down_and_no_dimension_opening_a_new_store_is_one_typed_line_naming_dimension(
    down, sleeps, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """Before, a ``ModelUnavailableError`` raised from the probe, deep in the container's wiring."""
    with pytest.raises(ConfigurationError) as caught:
        open_memory(tmp_path / "m.db", embedder=OpenAIEmbedder(down, "text-embedder", sleep=sleeps))
    message = str(caught.value)
    assert "\n" not in message and "dimension=" in message and "text-embedder" in message
    assert "APIConnectionError" in message
    frames = [frame.filename for frame in traceback.extract_tb(caught.value.__traceback__)]
    assert not any("dependency_injector" in name or name.endswith("client.py") for name in frames), frames


def test_a_store_the_model_filled_reopens_without_asking_the_server(server, client, down, sleeps, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The store records ``text-embedder@3``: an embedder of that model given no dimension takes
    it from there, with the server up (no request) or down (no error)."""
    server.embeddings(embedding_answer([[1.0, 2.0, 2.0]]))
    path = tmp_path / "m.db"
    with open_memory(path, embedder=OpenAIEmbedder(client, "text-embedder", sleep=sleeps)):  # a new store: one probe
        pass
    assert len(server.requests_to(EMBEDDINGS)) == 1
    embedder = OpenAIEmbedder(client, "text-embedder", sleep=sleeps)
    with open_memory(path, embedder=embedder):
        assert embedder.model_id == "text-embedder@3"
    assert len(server.requests_to(EMBEDDINGS)) == 1  # no second probe
    with open_memory(path, embedder=OpenAIEmbedder(down, "text-embedder", sleep=sleeps)):
        pass
    assert sleeps.delays == []
    with pytest.raises(ConfigurationError, match="allow_embedding_model_change"):  # another model: still asked, still refused
        server.embeddings(embedding_answer([[1.0, 0.0]]))
        open_memory(path, embedder=OpenAIEmbedder(client, "other-embedder", sleep=sleeps))
