package logging

import (
	"strings"
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

// TestBoundedReportsTheCaller checks that the wrapper's own frame does not
// shift the caller a sink reports, for Info and Error alike.
func TestBoundedReportsTheCaller(t *testing.T) {
	var lines []string
	sink := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{LogCaller: funcr.All})
	log := Bounded(sink, MaxVerbosity)
	log.Info("info")
	log.Error(nil, "error")
	log.WithName("named").WithValues("k", "v").Info("derived")
	if len(lines) != 3 {
		t.Fatalf("logged %q, want 3 lines", lines)
	}
	for _, line := range lines {
		if !strings.Contains(line, `"file"="bounded_test.go"`) {
			t.Errorf("line %s does not name bounded_test.go as its caller", line)
		}
	}
}
