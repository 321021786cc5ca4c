package logging

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
)

func TestBounded(t *testing.T) {
	var lines []string
	sink := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{Verbosity: 10})
	log := Bounded(sink, MaxVerbosity).WithName("client").WithValues("k", "v")
	for v := range 10 {
		log.V(v).Info("line", "v", v)
	}
	if got := len(lines); got != MaxVerbosity+1 {
		t.Errorf("logged %d lines of V(0) to V(9), want %d: %q", got, MaxVerbosity+1, lines)
	}
	if log.V(MaxVerbosity + 1).Enabled() {
		t.Errorf("V(%d) is enabled", MaxVerbosity+1)
	}
	log.Error(nil, "errors are always logged")
	if diff := cmp.Diff(`client "level"=0 "msg"="line" "k"="v" "v"=0`, lines[0]); diff != "" {
		t.Errorf("first line (-want +got):\n%s", diff)
	}
	if len(lines) != MaxVerbosity+2 {
		t.Errorf("the error was not logged: %q", lines)
	}
	if l := Bounded(logr.Discard(), 1); l.GetSink() != nil {
		t.Errorf("Bounded(Discard) has a sink")
	}
}
