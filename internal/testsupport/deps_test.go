package testsupport_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The binary never links test support: no package that cmd/linkd depends
// on is under internal/testsupport.
func TestBinaryDoesNotImportTestSupport(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	const module = "github.com/linkd/linkd"
	out, err := exec.Command(goTool, "list", "-deps", module+"/cmd/linkd").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	n := 0
	for _, pkg := range strings.Fields(string(out)) {
		n++
		if strings.HasPrefix(pkg, module+"/internal/testsupport") {
			t.Errorf("cmd/linkd depends on %s, which serves tests only", pkg)
		}
	}
	if n < 10 {
		t.Fatalf("go list -deps listed %d packages: %s", n, out)
	}
}
