package localapi_test

import (
	"os/exec"
	"strings"
	"testing"
)

// domain are the packages of the node's services: the local API's clients
// speak the API's vocabulary and import none of them.
var domain = []string{
	"github.com/parley-mesh/parley/rooms",
	"github.com/parley-mesh/parley/identity",
	"github.com/parley-mesh/parley/consent",
	"github.com/parley-mesh/parley/discovery",
	"github.com/parley-mesh/parley/node",
	"github.com/parley-mesh/parley/internal/inbox",
	"github.com/parley-mesh/parley/internal/agents",
	"github.com/parley-mesh/parley/internal/contacts",
	"github.com/parley-mesh/parley/internal/store",
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, out)
	}
	return strings.Fields(string(out))
}

// TestOneVocabulary: the local API, its texts and the MCP server depend on
// no domain package (nor do they reach one through another); the CLI
// imports none directly (it imports node only to run one).
func TestOneVocabulary(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool to list packages")
	}
	for _, pkg := range []string{"../localapi", "../mcp", "../manual"} {
		for _, dep := range goList(t, "-deps", pkg) {
			for _, d := range domain {
				if dep == d || strings.HasPrefix(dep, d+"/") {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
	for _, imp := range goList(t, "-f", `{{join .Imports " "}}`, "../../cmd/parley") {
		for _, d := range domain {
			if imp == d && d != "github.com/parley-mesh/parley/node" {
				t.Errorf("cmd/parley imports %s", imp)
			}
		}
	}
}
