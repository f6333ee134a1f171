"""Environments contributed to Agent Lightning."""
