# conftest (OPA) rules on `reconciler plan --format json` (schema: `reconciler schema --plan`).
package main

import rego.v1

# No integration is deleted or replaced from a pull request.
deny contains msg if {
	some op in input.operations
	op.kind == "Integration"
	op.action in {"delete", "replace"}
	msg := sprintf("%s: integrations are deleted by hand, after review (%s)", [op.address, op.action])
}

# A plan with many deletes needs a second look.
deny contains msg if {
	input.summary.delete > 5
	msg := sprintf("the plan deletes %d resources (at most 5)", [input.summary.delete])
}

# Moving a prompt's labels is worth a line in the review.
warn contains msg if {
	some op in input.operations
	some change in op.changes
	change.path == "version.labels"
	msg := sprintf("%s: labels %v -> %v", [op.address, change.before, change.after])
}
