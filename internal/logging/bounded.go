// Package logging holds what the manager does to its logger.
package logging

import "github.com/go-logr/logr"

// MaxVerbosity is the most verbose level the manager logs. client-go logs
// through the manager's logger too: request headers (the manager's bearer
// token) from V(7), and request and response bodies (Secrets and specs
// included) from V(8). No level the operator offers may publish those.
const MaxVerbosity = 6

// Bounded returns l with every level above maxV disabled, whatever the
// sink itself would enable. Sinks that report their caller still report
// the caller of the returned logger.
func Bounded(l logr.Logger, maxV int) logr.Logger {
	sink := l.GetSink()
	if sink == nil {
		return l
	}
	// The sink was initialised for l; it now sits one frame deeper,
	// behind the wrapper's Info and Error.
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	return logr.New(&boundedSink{LogSink: sink, max: maxV})
}

// boundedSink disables the levels of its sink above max.
type boundedSink struct {
	logr.LogSink
	max int
}

// Init does nothing: the wrapped sink was initialised by the logger it
// came from, and initialising it again would add the call depth twice.
func (s *boundedSink) Init(logr.RuntimeInfo) {}

// Enabled reports whether level is at most max and enabled by the sink.
func (s *boundedSink) Enabled(level int) bool { return level <= s.max && s.LogSink.Enabled(level) }

// Info logs when level is enabled.
func (s *boundedSink) Info(level int, msg string, kv ...any) {
	if s.Enabled(level) {
		s.LogSink.Info(level, msg, kv...)
	}
}

// Error logs always, as logr does. It is written out, not promoted from
// the wrapped sink, so that it adds the same one frame Info does.
func (s *boundedSink) Error(err error, msg string, kv ...any) {
	s.LogSink.Error(err, msg, kv...)
}

// WithValues keeps the bound.
func (s *boundedSink) WithValues(kv ...any) logr.LogSink {
	return &boundedSink{LogSink: s.LogSink.WithValues(kv...), max: s.max}
}

// WithName keeps the bound.
func (s *boundedSink) WithName(name string) logr.LogSink {
	return &boundedSink{LogSink: s.LogSink.WithName(name), max: s.max}
}

// WithCallDepth keeps the bound and the call depth of sinks that have one.
func (s *boundedSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return &boundedSink{LogSink: cd.WithCallDepth(depth), max: s.max}
	}
	return s
}
