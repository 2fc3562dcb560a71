package browser

import (
	"strings"
	"testing"
)

func TestFindHonoursEnv(t *testing.T) {
	t.Setenv(Env, "/nonexistent/chromium")
	if p, err := Find(); err == nil || !strings.Contains(err.Error(), "/nonexistent/chromium") {
		t.Errorf("Find with $%s set to a missing file: %q, %v", Env, p, err)
	}
	t.Setenv(Env, "true") // any executable on PATH
	if p, err := Find(); err != nil || !strings.HasSuffix(p, "/true") {
		t.Errorf("Find with $%s=true: %q, %v", Env, p, err)
	}
}
