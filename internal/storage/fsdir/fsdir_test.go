package fsdir

import (
	"path/filepath"
	"testing"
)

func TestSync(t *testing.T) {
	if err := Sync(t.TempDir()); err != nil {
		t.Fatalf("Sync of a directory: %v", err)
	}
	if err := Sync(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("Sync of a missing directory did not fail")
	}
}
