package domain_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The domain packages depend on the standard library and on each other
// only: no driver, no framework, no infrastructure of this module. Their
// tests keep to the same rule.
func TestDomainImportsOnlyStandardLibrary(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	const module = "github.com/linkd/linkd"
	for _, args := range [][]string{
		{"list", "-deps", module + "/domain/..."},
		{"list", "-deps", "-test", module + "/domain/..."},
	} {
		out, err := exec.Command(goTool, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for _, pkg := range strings.Fields(string(out)) {
			if strings.HasPrefix(pkg, "[") {
				continue // the "[x.test]" part of a test variant's name
			}
			pkg = strings.TrimSuffix(strings.TrimSuffix(pkg, ".test"), "_test") // test binaries and external test packages
			first, _, _ := strings.Cut(pkg, "/")
			stdlib := !strings.Contains(first, ".")
			own := pkg == module+"/domain" || strings.HasPrefix(pkg, module+"/domain/")
			if !stdlib && !own {
				t.Errorf("go %s: domain depends on %s", strings.Join(args, " "), pkg)
			}
		}
	}
}
