"""The daemon's assembly: skills and plugins loaded, the model chosen, and the Server built from
the settings."""
