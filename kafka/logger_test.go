package kafka

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
)

func TestWatermillLogLevels(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	wl := wmLogger(l).With(watermill.LogFields{"topic": "linkd.link"})
	wl.Trace("per message", nil)
	wl.Info("subscribed", watermill.LogFields{"group": "g"})
	wl.Error("failed", errors.New("boom"), nil)
	out := buf.String()
	for _, want := range []string{"level=DEBUG msg=subscribed", "group=g", "topic=linkd.link", "level=ERROR msg=failed", "err=boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
	if strings.Contains(out, "per message") {
		t.Errorf("trace logged at debug level: %q", out)
	}
}
