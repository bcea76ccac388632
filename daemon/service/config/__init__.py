"""The daemon's settings: the TOML config read and checked, the places code and config may come
from, and the strategy it names."""
