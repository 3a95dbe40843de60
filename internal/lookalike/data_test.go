package lookalike

import "testing"

// The embedded confusables data reads whole, and a file as Unicode
// publishes it (a byte-order mark, comments after the fields) reads too.
func TestConfusablesData(t *testing.T) {
	m, err := parseConfusables(confusablesTxt)
	if err != nil || len(m) != 6311 || m['\u0430'] != "a" || m['m'] != "rn" {
		t.Fatalf("the embedded data: %d entries, %v", len(m), err)
	}
	m, err = parseConfusables("\ufeff# confusables.txt\r\n# Version: 16.0.0\r\n\r\n05AD ;\t0596 ;\tMA\t# ( ֭ → ֖ ) HEBREW ACCENT DEHI → HEBREW ACCENT TIPEHA\r\n0025 ;\t00BA 002F 2080 ;\tMA\t#* ( % → º/₀ )\r\n")
	if err != nil || len(m) != 2 || m['%'] != "º/₀" {
		t.Fatalf("a file as published: %q, %v", m, err)
	}
	if _, err := parseConfusables("0430 ; zz ; MA\n"); err == nil {
		t.Fatal("a bad line was read")
	}
}
