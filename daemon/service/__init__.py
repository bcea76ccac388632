"""The daemon: the serving loop, its run queue and worker, config, plugins and systemd.

It assembles the framework (``edge_agentd.agent``) and a model (``edge_agentd.model``) behind the
wire protocol (``edge_agentd.protocol.wire``).
"""
