"""``reconciler pull``: live edits written back into the manifests (docs/manifests.md, "Two writers")."""
