"""Fleets: clusters as specs, collectives on their links, layouts, training steps and the
layout search (DESIGN.md, "Past one node")."""
