"""The framework: the bounded loop, its events, the skills registry and the model seam.

This layer imports nothing else of edge_agentd; the models and the service build on it.
"""
