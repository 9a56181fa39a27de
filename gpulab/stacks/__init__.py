"""Stacks: one module per lab kind, each turning a profile into a plan of steps."""
