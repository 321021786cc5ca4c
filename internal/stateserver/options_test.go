package stateserver

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/testtools"
)

func TestBasicAuth(t *testing.T) {
	cases := map[string]struct {
		opts       []Option
		user, pass string
		noAuth     bool
		header     string // an Authorization header sent as is
		wantStatus int
		wantChall  string
	}{
		"auth off, no credentials": {
			noAuth: true, wantStatus: http.StatusNotFound,
		},
		"auth off, credentials ignored": {
			user: "u", pass: "p", wantStatus: http.StatusNotFound,
		},
		"auth on, no credentials": {
			opts: []Option{WithBasicAuth("admin", "s3cret")}, noAuth: true,
			wantStatus: http.StatusUnauthorized, wantChall: `Basic realm="stateserver", charset="UTF-8"`,
		},
		"auth on, another scheme": {
			opts: []Option{WithBasicAuth("admin", "s3cret")}, noAuth: true, header: "Bearer s3cret",
			wantStatus: http.StatusUnauthorized, wantChall: `Basic realm="stateserver", charset="UTF-8"`,
		},
		"auth on, malformed basic credentials": {
			opts: []Option{WithBasicAuth("admin", "s3cret")}, noAuth: true, header: "Basic !!!",
			wantStatus: http.StatusUnauthorized, wantChall: `Basic realm="stateserver", charset="UTF-8"`,
		},
		"auth on, wrong password": {
			opts: []Option{WithBasicAuth("admin", "s3cret")}, user: "admin", pass: "wrong",
			wantStatus: http.StatusForbidden,
		},
		"auth on, wrong username": {
			opts: []Option{WithBasicAuth("admin", "s3cret")}, user: "root", pass: "s3cret",
			wantStatus: http.StatusForbidden,
		},
		"auth on, password prefix": {
			opts: []Option{WithBasicAuth("admin", "s3cret")}, user: "admin", pass: "s3cre",
			wantStatus: http.StatusForbidden,
		},
		"auth on, empty credentials": {
			opts: []Option{WithBasicAuth("admin", "s3cret")}, user: "", pass: "",
			wantStatus: http.StatusForbidden,
		},
		"auth on, right credentials": {
			opts: []Option{WithBasicAuth("admin", "s3cret")}, user: "admin", pass: "s3cret",
			wantStatus: http.StatusNotFound,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, New(NewMemoryStore(), tc.opts...))
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/state/x", http.NoBody)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.noAuth {
				req.SetBasicAuth(tc.user, tc.pass)
			}
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tc.wantChall {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tc.wantChall)
			}
		})
	}
}

func TestLogger(t *testing.T) {
	var logs testtools.SyncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	ts := startServer(t, New(NewMemoryStore(), WithLogger(logger), WithBasicAuth("admin", "hunter2")))

	body := []byte(`{"secret_output":"top-secret-value"}`)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/state/x?ID=lock-id-in-query", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("admin", "hunter2")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	send(t, ts.Client(), http.MethodGet, ts.URL+"/state/x", nil, nil) // 401

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d log lines, want 2:\n%s", len(lines), logs.String())
	}
	type entry struct {
		Msg, Method, Path string
		Status            int
	}
	var got []entry
	for _, line := range lines {
		var e entry
		var raw map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			t.Fatal(err)
		}
		if _, ok := raw["duration"]; !ok {
			t.Errorf("log line %q has no duration", line)
		}
		got = append(got, e)
	}
	want := []entry{
		{Msg: "request", Method: "POST", Path: "/state/x", Status: http.StatusOK},
		{Msg: "request", Method: "GET", Path: "/state/x", Status: http.StatusUnauthorized},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log entries (-want +got):\n%s", diff)
	}
	for _, secret := range []string{"hunter2", "top-secret-value", "lock-id-in-query", "YWRtaW46aHVudGVyMg"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log contains %q:\n%s", secret, logs.String())
		}
	}
}

// TestForceUnlockLogsHolder checks that a force unlock names the holder it
// released in the log, by ID and Who, and nothing else of its LockInfo.
func TestForceUnlockLogsHolder(t *testing.T) {
	var logs testtools.SyncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	ts := startServer(t, New(NewMemoryStore(), WithLogger(logger)))
	holder := []byte(`{"ID":"stuck-lock-id","Operation":"OperationTypeApply","Info":"private-info-text","Who":"alice@build-7","Version":"1.5.7","Created":"2026-01-02T03:04:05Z","Path":""}`)
	if got, _ := send(t, ts.Client(), MethodLock, ts.URL+"/state/prod", holder, nil); got.Status != http.StatusOK {
		t.Fatalf("LOCK: %v", got)
	}
	if got, _ := send(t, ts.Client(), MethodUnlock, ts.URL+"/state/prod", holder, nil); got.Status != http.StatusOK {
		t.Fatalf("UNLOCK by the holder: %v", got)
	}
	if got, _ := send(t, ts.Client(), MethodLock, ts.URL+"/state/prod", holder, nil); got.Status != http.StatusOK {
		t.Fatalf("LOCK again: %v", got)
	}
	if got, _ := send(t, ts.Client(), MethodUnlock, ts.URL+"/state/prod", []byte{}, nil); got.Status != http.StatusOK {
		t.Fatalf("forced UNLOCK: %v", got)
	}

	type entry struct {
		Level, Msg, Path, HolderID, HolderWho string
	}
	var got []entry
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var raw map[string]any
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if raw["msg"] == "request" {
			continue
		}
		str := func(k string) string { s, _ := raw[k].(string); return s }
		got = append(got, entry{Level: str("level"), Msg: str("msg"), Path: str("path"), HolderID: str("holder_id"), HolderWho: str("holder_who")})
	}
	want := []entry{{Level: "WARN", Msg: "force unlock released a lock", Path: "/state/prod", HolderID: "stuck-lock-id", HolderWho: "alice@build-7"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log entries other than requests (-want +got):\n%s", diff)
	}
	if strings.Contains(logs.String(), "private-info-text") {
		t.Errorf("the log contains the holder's Info:\n%s", logs.String())
	}
}

// TestUnlockBodies checks that each UnlockBodies setting answers the three
// UNLOCK bodies as the servers it imitates do, and that a refused UNLOCK
// leaves the lock held.
func TestUnlockBodies(t *testing.T) {
	held := lockInfo("lock-1")
	idOnly := []byte(`{"ID":"lock-1","Operation":"","Info":"","Who":"","Version":"","Created":"0001-01-01T00:00:00Z","Path":""}`)
	respaced := []byte(strings.ReplaceAll(string(held), ",", ", "))
	type answers struct{ Held, Respaced, IDOnly, Empty int }
	cases := map[string]struct {
		accept UnlockBodies
		want   answers
	}{
		"any":             {AcceptAnyUnlock, answers{200, 200, 200, 200}},
		"empty body only": {AcceptEmptyUnlock, answers{200, 200, 400, 200}},
		"ID body only":    {AcceptIDUnlock, answers{200, 200, 200, 500}},
		"neither":         {AcceptNoForceUnlock, answers{200, 200, 400, 500}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, New(NewMemoryStore(), WithUnlockBodies(tc.accept)))
			unlock := func(body []byte) int {
				if got, _ := send(t, ts.Client(), MethodLock, ts.URL+"/state/prod", held, nil); got.Status != http.StatusOK {
					t.Fatalf("LOCK: %v", got)
				}
				got, _ := send(t, ts.Client(), MethodUnlock, ts.URL+"/state/prod", body, nil)
				if got.Status != http.StatusOK {
					// Refused: the lock is still held, and its holder can release it.
					if got, _ := send(t, ts.Client(), MethodLock, ts.URL+"/state/prod", lockInfo("lock-2"), nil); got.Status != http.StatusLocked {
						t.Errorf("LOCK after a refused UNLOCK: %v, want 423", got)
					}
					if got, _ := send(t, ts.Client(), MethodUnlock, ts.URL+"/state/prod", held, nil); got.Status != http.StatusOK {
						t.Fatalf("UNLOCK by the holder: %v", got)
					}
				}
				return got.Status
			}
			got := answers{Held: unlock(held), Respaced: unlock(respaced), IDOnly: unlock(idOnly), Empty: unlock([]byte{})}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("UNLOCK answers (-want +got):\n%s", diff)
			}
		})
	}
}
