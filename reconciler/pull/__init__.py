"""``reconciler pull``: live edits written back into the manifests (product.md section 8)."""
