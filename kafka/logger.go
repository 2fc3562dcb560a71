package kafka

import (
	"context"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
)

// wmLogger adapts slog to Watermill (nil gives a logger that drops
// everything), one level down: Watermill's Info is
// chatty (every subscribe and reconnect), so it goes to Debug. Unlike
// Watermill's own adapter it checks the level before building attributes:
// watermill-kafka logs at Trace for every message.
func wmLogger(l *slog.Logger) watermill.LoggerAdapter {
	if l == nil {
		return watermill.NopLogger{}
	}
	return slogAdapter{l}
}

type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) log(level slog.Level, msg string, fields watermill.LogFields, extra ...any) {
	if !a.l.Enabled(context.Background(), level) {
		return
	}
	args := make([]any, 0, 2*len(fields)+len(extra))
	for k, v := range fields {
		args = append(args, k, v)
	}
	a.l.Log(context.Background(), level, msg, append(args, extra...)...)
}

func (a slogAdapter) Error(msg string, err error, fields watermill.LogFields) {
	a.log(slog.LevelError, msg, fields, "err", err)
}
func (a slogAdapter) Info(msg string, fields watermill.LogFields) {
	a.log(slog.LevelDebug, msg, fields)
}
func (a slogAdapter) Debug(msg string, fields watermill.LogFields) {
	a.log(slog.LevelDebug, msg, fields)
}
func (a slogAdapter) Trace(msg string, fields watermill.LogFields) {
	a.log(watermill.LevelTrace, msg, fields)
}
func (a slogAdapter) With(fields watermill.LogFields) watermill.LoggerAdapter {
	args := make([]any, 0, 2*len(fields))
	for k, v := range fields {
		args = append(args, k, v)
	}
	return slogAdapter{a.l.With(args...)}
}
