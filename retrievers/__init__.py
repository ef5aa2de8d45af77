"""Retrievers: rank an index's chunks for a query. See retrievers.registry."""
