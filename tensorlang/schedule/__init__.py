"""Polyhedral scheduling with islpy (the only package that imports islpy)."""
