"""The papers' baselines, acting through the same robot interface and action space."""
