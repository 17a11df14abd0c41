"""Helpers shared by tests: local stand-ins for external services."""
