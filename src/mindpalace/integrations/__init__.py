"""mindpalace inside agent frameworks.

Each submodule adapts the palace to one framework and needs that framework,
installed with its extra:

- ``mindpalace.integrations.langchain`` (``pip install 'mindpalace[langchain]'``):
  a chat message history, a retriever, memory_store / memory_recall tools
  (named as the MCP tools that do the same).
- ``mindpalace.integrations.pydantic_ai`` (``mindpalace[pydantic-ai]``): a
  toolset and instructions carrying the context block.
- ``mindpalace.integrations.openai_agents`` (``mindpalace[openai-agents]``):
  a ``Session``, function tools and instructions carrying the context block.
- ``mindpalace.integrations.llama_index`` (``mindpalace[llama-index]``): a
  memory block for ``Memory``, a chat store, a retriever, remember / recall
  tools.

``mindpalace.integrations.common`` holds what they share and needs none of
them. Every integration takes a ``Palace`` (any view: pass one palace and
many integrations share its engine) or a target (a SQLite path or a
``postgresql://`` URL), and the agent's scope as parameters.
"""
