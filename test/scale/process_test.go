package main

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProcessStop stops shell programs that exit on SIGTERM, only on
// SIGQUIT, or not at all: one that outlives the timeout gets SIGQUIT (on
// which a Go program prints its goroutines), then SIGKILL.
func TestProcessStop(t *testing.T) {
	// The background sleep's output goes nowhere, so that it does not
	// keep the program's output open once the shell is gone.
	const wait = `sleep 5 >/dev/null 2>&1 & wait`
	cases := map[string]struct {
		script     string
		wantErr    string
		wantOutput string
	}{
		"exits on SIGTERM":                {script: `trap "exit 0" TERM; ` + wait},
		"exits only on SIGQUIT, printing": {script: `trap "" TERM; trap "echo what it waits for; exit 2" QUIT; ` + wait, wantErr: "still running", wantOutput: "what it waits for"},
		"ignores both":                    {script: `trap "" TERM QUIT; ` + wait, wantErr: "still running"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			p, err := startProcess("program", "/bin/sh", []string{"-c", tc.script}, nil, &out)
			if err != nil {
				t.Fatal(err)
			}
			p.stopTimeout, p.quitGrace = 300*time.Millisecond, 300*time.Millisecond
			time.Sleep(100 * time.Millisecond) // the traps are set
			_, err = p.stop(syscall.SIGTERM)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("stop() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("stop() = %v, want an error with %q", err, tc.wantErr)
			}
			if p.running() {
				t.Error("the program still runs after stop")
			}
			if !strings.Contains(out.String(), tc.wantOutput) {
				t.Errorf("output %q, want it to hold %q", out.String(), tc.wantOutput)
			}
		})
	}
}
