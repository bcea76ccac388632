"""Help for a model too small to drive the loop alone (docs/design.md, "Small models"): the skill
chosen by likelihood, where to look in a result, a second call, and answers the engine renders
from the results for the model to choose among. It enters the loop through one seam,
:class:`~edge_agentd.agent.protocol.Guide`; without it the loop is plain."""
