package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKillMidUploadKeepsOldState kills the binary with SIGKILL while a large
// upload is being written to disk: after a restart on the same data
// directory the old state is served whole and the torn temporary file is
// gone. An upload that was answered 200 survives a SIGKILL right after.
func TestKillMidUploadKeepsOldState(t *testing.T) {
	dataDir := t.TempDir()
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", dataDir}
	const (
		path      = "/state/crash"
		totalSize = 64 << 20
		sentFirst = 16 << 20
	)
	oldState := []byte(`{"version":4,"serial":1}`)

	first := startServerProcess(t, args)
	c := newDirectClient(t, first.url, nil)
	if status, body := c.do(http.MethodPost, path, oldState); status != http.StatusOK {
		t.Fatalf("POST the old state: %d %s", status, body)
	}

	// Send part of a large body, then keep the request open.
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, first.url+path, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = totalSize
	uploadDone := make(chan error, 1)
	go func() {
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		uploadDone <- err
	}()
	if _, err := pw.Write(bytes.Repeat([]byte("x"), sentFirst)); err != nil {
		t.Fatalf("sending the first part of the body: %v", err)
	}
	waitForTempFile(t, dataDir)

	first.kill(t)
	_ = pw.CloseWithError(io.ErrClosedPipe)
	if err := <-uploadDone; err == nil {
		t.Error("the interrupted upload succeeded")
	}

	second := startServerProcess(t, args)
	c = newDirectClient(t, second.url, nil)
	if status, body := c.do(http.MethodGet, path, nil); status != http.StatusOK || body != string(oldState) {
		t.Errorf("GET after the crash: %d %.80q, want 200 with the old state", status, body)
	}
	if temps := tempFiles(t, dataDir); len(temps) != 0 {
		t.Errorf("temporary files after the restart: %v", temps)
	}

	newState := []byte(strings.Repeat(" ", 1<<20) + `{"version":4,"serial":2}`)
	if status, body := c.do(http.MethodPost, path, newState); status != http.StatusOK {
		t.Fatalf("POST the new state: %d %s", status, body)
	}
	second.kill(t)
	third := startServerProcess(t, args)
	c = newDirectClient(t, third.url, nil)
	if status, body := c.do(http.MethodGet, path, nil); status != http.StatusOK || body != string(newState) {
		t.Errorf("GET after a crash following a completed upload: %d, %d bytes; want 200 with the %d bytes of the new state",
			status, len(body), len(newState))
	}
}

// waitForTempFile waits until the server is writing a non-empty temporary
// file in dir.
func waitForTempFile(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, name := range tempFiles(t, dir) {
			if info, err := os.Stat(filepath.Join(dir, name)); err == nil && info.Size() > 0 {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no temporary file is being written in the data directory after 30s; files: %v", tempFiles(t, dir))
}

// tempFiles lists the temporary files of a data directory.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			names = append(names, e.Name())
		}
	}
	return names
}
