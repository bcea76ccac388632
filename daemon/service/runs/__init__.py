"""The runs: the queue waiting for the one model, and each job's thread from the model's load to
the run's end."""
