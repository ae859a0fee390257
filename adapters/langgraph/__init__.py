"""Adapters layer (LangGraph / LangChain): short-term memory middleware, a BaseStore and agent tools (optional extra ``langgraph``)."""
