"""Help the engine gives a model (docs/design.md, "Small models" and "One model turn"): for one
too small to drive the loop, the skill chosen by likelihood, where to look in a result, a second
call, and answers rendered from the results for it to choose among (Guidance); for one that
drives the loop, the engine's sentence once it has results (Answering). Each enters the loop
through one seam, :class:`~edge_agentd.agent.guide.Guide`; without one the loop is the seed's."""
