// Package pebblelog routes Pebble's messages to slog, for the stores built
// on Pebble (the embedded event store's index, analytics, the click index).
package pebblelog

import (
	"fmt"
	"log/slog"
)

// Logger is a pebble.Logger: informational messages at debug level,
// errors at error level; a fatal message is logged, then panics.
type Logger struct {
	log       *slog.Logger
	component string
}

// New returns the Logger of a component ("analytics", ...).
func New(log *slog.Logger, component string) Logger {
	if log == nil {
		log = slog.Default()
	}
	return Logger{log: log, component: component}
}

func (l Logger) Infof(format string, args ...any) {
	l.log.Debug("pebble: "+fmt.Sprintf(format, args...), "component", l.component)
}

func (l Logger) Errorf(format string, args ...any) {
	l.log.Error("pebble: "+fmt.Sprintf(format, args...), "component", l.component)
}

func (l Logger) Fatalf(format string, args ...any) {
	msg := "pebble: " + fmt.Sprintf(format, args...)
	l.log.Error(msg, "component", l.component)
	panic(l.component + ": " + msg)
}
