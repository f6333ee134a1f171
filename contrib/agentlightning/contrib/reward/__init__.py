"""Reward functions contributed to Agent Lightning."""
