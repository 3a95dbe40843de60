package main

import (
	"strings"
	"testing"
)

// Regression: revoking a contact revoked already printed an error chain of
// four layers, naming the peer twice ("contacts: revoke ID: consent:
// revoke ID: consent: operation does not fit contact state: contact is
// revoked"). It says it in one sentence: the contact is already revoked.
func TestCLIContactRevokeTwiceSaysItPlainly(t *testing.T) {
	t.Parallel()
	homeA, _, idB, _ := twoContacts(t)
	if _, errs, code := run(t, "--home", homeA, "contact", "revoke", idB); code != 0 {
		t.Fatalf("revoke: %s", errs)
	}
	_, errs, code := run(t, "--home", homeA, "contact", "revoke", idB)
	if code == 0 {
		t.Fatalf("a second revoke succeeded: %s", errs)
	}
	if strings.Count(errs, idB) > 1 || strings.Contains(errs, "consent:") || strings.Contains(errs, "does not fit contact state") ||
		!strings.Contains(errs, "is already revoked: nothing to do") {
		t.Fatalf("second revoke: %q; want one plain sentence (already revoked)", strings.TrimSpace(errs))
	}
}
