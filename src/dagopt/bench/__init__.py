"""Experiments that reproduce the papers' tables on our machines."""
