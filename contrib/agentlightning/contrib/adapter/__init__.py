"""Adapters contributed to Agent Lightning."""
