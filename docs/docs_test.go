// Package docs_test keeps the documentation honest: every relative link in
// README.md and docs/ leads to a file of the repository, every docs/*.md and
// ADR that code or docs name exists, no line is too long to read, and no
// work-session diary (a "stop" and its number) creeps back in.
package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// root is the repository root: go test runs in the package's directory.
const root = ".."

// maxLine is the longest line a doc may have, in characters.
const maxLine = 600

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	docPath = regexp.MustCompile(`\bdocs/[A-Za-z0-9_./-]+\.md\b`)
	adrRef  = regexp.MustCompile(`\bADRs? (\d{4})\b`)
	stopN   = regexp.MustCompile(`\b[Ss]top [0-9]+\b`)
)

// docs returns README.md and every markdown file under docs/, relative to
// the repository root.
func docs(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sources returns the files besides the docs that name docs: Go files,
// the Makefile, the bench and scripts directories.
func sources(t *testing.T) []string {
	t.Helper()
	files := []string{"Makefile"}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || rel == "data") {
				return filepath.SkipDir
			}
			return nil
		}
		dir := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
		if strings.HasSuffix(p, ".go") || dir == "bench" || dir == "scripts" {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// adrExists reports whether docs/adr holds the record numbered n.
func adrExists(n string) bool {
	m, _ := filepath.Glob(filepath.Join(root, "docs", "adr", n+"-*.md"))
	return len(m) > 0
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRelativeLinksResolve(t *testing.T) {
	t.Parallel()
	for _, f := range docs(t) {
		for i, line := range strings.Split(read(t, f), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
					continue
				}
				target, _, _ = strings.Cut(target, "#")
				p := filepath.Join(root, filepath.Dir(f), filepath.FromSlash(target))
				if !exists(p) {
					t.Errorf("%s:%d: link to %s: no such file", f, i+1, m[1])
				}
			}
		}
	}
}

func TestNamedDocsExist(t *testing.T) {
	t.Parallel()
	for _, f := range append(docs(t), sources(t)...) {
		if f == filepath.Join("docs", "docs_test.go") {
			continue // this file's own examples
		}
		for i, line := range strings.Split(read(t, f), "\n") {
			for _, p := range docPath.FindAllString(line, -1) {
				if !exists(filepath.Join(root, filepath.FromSlash(p))) {
					t.Errorf("%s:%d: names %s, which is not in the repository", f, i+1, p)
				}
			}
			for _, m := range adrRef.FindAllStringSubmatch(line, -1) {
				if !adrExists(m[1]) {
					t.Errorf("%s:%d: cites ADR %s, which docs/adr does not hold", f, i+1, m[1])
				}
			}
		}
	}
}

func TestNoLongLines(t *testing.T) {
	t.Parallel()
	for _, f := range docs(t) {
		for i, line := range strings.Split(read(t, f), "\n") {
			if n := utf8.RuneCountInString(line); n > maxLine {
				t.Errorf("%s:%d: %d characters, at most %d", f, i+1, n, maxLine)
			}
		}
	}
}

func TestNoWorkDiary(t *testing.T) {
	t.Parallel()
	for _, f := range append(docs(t), sources(t)...) {
		if f == filepath.Join("docs", "docs_test.go") {
			continue
		}
		for i, line := range strings.Split(read(t, f), "\n") {
			if m := stopN.FindString(line); m != "" {
				t.Errorf("%s:%d: %q: cite an ADR or docs/performance.md, not a work session", f, i+1, m)
			}
		}
	}
}

// The checks must catch what they are for.
func TestChecksCatch(t *testing.T) {
	t.Parallel()
	session := "S" + "top 26" // spelt apart so that grep finds no diary here
	if !stopN.MatchString(`see "`+session+`"`) || stopN.MatchString("stops 2 goroutines") {
		t.Error("stopN does not tell a work session from prose")
	}
	if m, _ := filepath.Glob(filepath.Join(root, "docs", "benchmarks*.md")); len(m) > 0 {
		t.Errorf("%v: benchmark diaries are back; their figures belong in docs/performance.md", m)
	}
	if adrExists("9999") {
		t.Error("adrExists finds a record that cannot exist")
	}
	if got := mdLink.FindAllStringSubmatch("[a](b.md) and [c](d/e.md#f)", -1); len(got) != 2 || got[1][1] != "d/e.md#f" {
		t.Errorf("mdLink found %q", got)
	}
}
