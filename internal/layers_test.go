package internal_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/linkd/linkd"

// The rule: internal/ is infrastructure, the level below the application.
// An internal package may import
//
//   - the standard library and other modules;
//   - the other packages of internal/;
//   - eventstore, the port (positions, errors, the Store interface the
//     storage helpers speak), but none of its adapters, which are built on
//     internal/storage themselves;
//   - domain/link, whose platform names internal/enrich classifies user
//     agents into. No other domain package: a new need is a conscious edit
//     here, not a drift.
//
// Never an application layer: api, commands, queries, projections/...,
// dashboard, kafka/..., cmd/..., nor tests/... or bench/....
//
// Tests (the _test files of any internal package) and the packages of
// internal/testsupport, which serve tests only, may in addition import
// internal/testsupport/... and the event store adapters (a real store to
// test against: pglimit's tests migrate PostgreSQL through
// eventstore/postgres). They keep away from the application layers too.
//
// Imports are checked directly, package by package: what an allowed
// package depends on is guarded by its own rule (domain/deps_test.go keeps
// domain/link on the standard library; eventstore imports nothing of
// this module).

// refusal says why an internal package may not import imp, or "" when it
// may. test is true for the imports of tests and of internal/testsupport.
func refusal(imp string, test bool) string {
	rel, ok := strings.CutPrefix(imp, module+"/")
	if !ok {
		return "" // the standard library and other modules
	}
	switch {
	case under(rel, "internal/testsupport"):
		if test {
			return ""
		}
		return "internal/testsupport serves tests only"
	case under(rel, "internal"), rel == "eventstore", rel == "domain/link":
		return ""
	case under(rel, "eventstore"):
		if test {
			return ""
		}
		return "an event store adapter sits above internal/ (tests may use one)"
	case under(rel, "domain"):
		return "of domain/, internal/ uses domain/link's value types only"
	}
	return "an application layer sits above internal/"
}

// under reports whether rel is dir or a package below it.
func under(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

// pkg is what go list says of a package.
type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// violations lists every import of pkgs that the rule refuses.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		support := under(strings.TrimPrefix(p.ImportPath, module+"/"), "internal/testsupport")
		check := func(imports []string, test bool) {
			for _, imp := range imports {
				if why := refusal(imp, test || support); why != "" {
					what := p.ImportPath
					if test {
						what += " (tests)"
					}
					out = append(out, fmt.Sprintf("%s imports %s: %s", what, imp, why))
				}
			}
		}
		check(p.Imports, false)
		check(p.TestImports, true)
		check(p.XTestImports, true)
	}
	return out
}

func TestInternalImportsNoApplicationLayer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	out, err := exec.Command(goTool, "list", "-json=ImportPath,Imports,TestImports,XTestImports", module+"/internal/...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list listed %d packages under internal/", len(pkgs))
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// The rule must refuse what it is for, and allow what internal/ uses today.
func TestLayerRuleCatches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, imp string
		test      bool
		refused   bool
	}{
		{"standard library", "net/http", false, false},
		{"other module", "github.com/cockroachdb/pebble/v2", false, false},
		{"a sibling", module + "/internal/storage/pebblelog", false, false},
		{"the event store port", module + "/eventstore", false, false},
		{"link value types", module + "/domain/link", false, false},
		{"test support in a test", module + "/internal/testsupport/pgtest", true, false},
		{"an adapter in a test", module + "/eventstore/postgres", true, false},
		{"api", module + "/api", false, true},
		{"commands", module + "/commands", false, true},
		{"queries", module + "/queries", false, true},
		{"projections", module + "/projections", false, true},
		{"a projection", module + "/projections/clickhouse/stats", false, true},
		{"dashboard", module + "/dashboard", false, true},
		{"kafka", module + "/kafka", false, true},
		{"kafka's test support", module + "/kafka/kafkatest", true, true},
		{"the composition root", module + "/cmd/linkd/app", false, true},
		{"an application layer in a test", module + "/commands", true, true},
		{"another aggregate", module + "/domain/webhook", false, true},
		{"the domain root", module + "/domain", false, true},
		{"test support in production", module + "/internal/testsupport/chtest", false, true},
		{"an adapter in production", module + "/eventstore/embedded", false, true},
		{"a name that only starts alike", module + "/internalx", false, true},
	} {
		if got := refusal(c.imp, c.test) != ""; got != c.refused {
			t.Errorf("%s: refusal(%s, test %v) refused %v, want %v", c.name, c.imp, c.test, got, c.refused)
		}
	}
	fabricated := []pkg{
		{ImportPath: module + "/internal/clock", Imports: []string{"time", module + "/queries"}},
		{ImportPath: module + "/internal/ids", TestImports: []string{module + "/api"}, XTestImports: []string{module + "/internal/testsupport/cpu"}},
		{ImportPath: module + "/internal/testsupport/chtest", Imports: []string{module + "/eventstore/postgres", module + "/kafka"}},
		{ImportPath: module + "/internal/enrich", Imports: []string{module + "/domain/link", module + "/eventstore"}},
	}
	want := []string{
		module + "/internal/clock imports " + module + "/queries",
		module + "/internal/ids (tests) imports " + module + "/api",
		module + "/internal/testsupport/chtest imports " + module + "/kafka",
	}
	got := violations(fabricated)
	if len(got) != len(want) {
		t.Fatalf("violations of a fabricated tree:\n%s\nwant %d, starting %q", strings.Join(got, "\n"), len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]+":") {
			t.Errorf("violation %d: %q, want %q", i, got[i], want[i])
		}
	}
}
