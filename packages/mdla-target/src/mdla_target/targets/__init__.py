"""Target description files (`<name>.toml`), shipped as package data."""
