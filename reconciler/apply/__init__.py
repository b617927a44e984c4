"""apply: execute a Plan against the API, then confirm convergence."""
