"""Profiles: the declarative description of a lab, its schema and its loader."""
