"""reconciler: declarative, stateless GitOps for the platform's management API."""

__version__ = "0.1.0"
