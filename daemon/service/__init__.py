"""The daemon: the serving loop, its run queue and worker, config, plugins and systemd.

It assembles the framework (``edge_agent.agent``) and a model (``edge_agent.model``) behind the
wire protocol (``edge_agent.protocol.wire``).
"""
