"""Community contributions to Agent Lightning."""
