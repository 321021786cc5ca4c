package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCloseKeepsTheLogsOfAFailedRun(t *testing.T) {
	cases := []struct {
		name     string
		keepLogs bool
		wantKept bool
	}{
		{name: "a run that passed leaves nothing", keepLogs: false, wantKept: false},
		{name: "a failed run keeps its logs", keepLogs: true, wantKept: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			dir := filepath.Join(tmp, "work")
			logDir := filepath.Join(dir, "logs")
			if err := os.MkdirAll(logDir, 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(logDir, "manager-1.log"), []byte("shutting down\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			h := &harness{dir: dir, logDir: logDir, keepLogs: tc.keepLogs}
			h.close()
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the work directory is still there (%v)", err)
			}
			kept, err := filepath.Glob(filepath.Join(tmp, "backend-operator-scale-logs-*", "logs", "manager-1.log"))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(kept) == 1; got != tc.wantKept {
				t.Fatalf("kept logs %q, want kept: %v", kept, tc.wantKept)
			}
			if tc.wantKept {
				data, err := os.ReadFile(kept[0])
				if err != nil || !strings.Contains(string(data), "shutting down") {
					t.Errorf("kept log = %q (%v), want the manager's log", data, err)
				}
			}
		})
	}
}
