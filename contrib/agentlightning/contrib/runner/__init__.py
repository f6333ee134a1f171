"""Runners contributed to Agent Lightning."""
